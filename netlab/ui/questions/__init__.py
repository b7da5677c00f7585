"""Each chapter's "predict, then measure" question as a ``Prediction`` widget (see ``ui/predict.py``), one
module per kind of measurement: ``ranks`` (training and collectives on real ranks: chapters 1-4 and
7), ``scale`` (the flow simulator and the formulas: chapters 5 and 8), ``packets`` (the packet fabric:
chapters 6 and 9).

The measurement runs when the student locks an answer, on real ranks, in the simulator or in the
packet-level fabric, with the same setup as the chapter's next cell (smaller where that cell is
long); the right option is read off the measurement, never written in. Explanations say why each
wrong option is wrong and, for the option the measurement makes right, why it is: the chapter's
text below the question only points here, so the explanation is read after answering. Sources are
the chapters' own (BytePS, OSDI 2020; Vasudevan et al., SIGCOMM 2009; PyTorch DDP's buckets).
"""
from __future__ import annotations

from .packets import ch6, ch9, ch9_reorder, ch9_trim, ch9_failover, ch9_planes, ch9_framing
from .ranks import ch1, ch2, ch3, ch4, ch7
from .scale import ch5, ch8_ina, ch8_bytes, ch8_fastest, ch8

__all__ = ["ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8_ina", "ch8_bytes", "ch8_fastest", "ch8", "ch9",
           "ch9_reorder", "ch9_trim", "ch9_failover", "ch9_planes", "ch9_framing"]
