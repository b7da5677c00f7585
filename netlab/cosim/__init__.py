"""Real ranks on a simulated fabric: the coordinator that times every message of a run in virtual
time on the packet fabric (``live``) or on chapter 5's flow-level fabric (``flows``), and the
experiments run that way (``experiments``). Chapters 5, 6 and 9."""
