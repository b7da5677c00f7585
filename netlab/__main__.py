import os
import sys

from .cli import main

code = main()
if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
    # Under torchrun: leave the process group together, then exit without running C++ static
    # destructors -- with torch 2.13, gloo plus torch.utils.flop_counter occasionally aborts there
    # ("terminate called without an active exception"), which torchrun would report as a failure.
    from .runtime.torchrun import _leave_together
    _leave_together()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
sys.exit(code)
