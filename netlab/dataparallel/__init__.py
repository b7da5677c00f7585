"""Data parallelism on real ranks: the training loop (``train``), one step and its scaling (``step``),
DDP's gradient buckets (``buckets``) and their all-reduce overlapped with the backward pass
(``overlap``), with the sync objects the loop takes (``sync``). Chapters 1 and 7."""
