"""The Linux testbed: senders and a receiver in network namespaces behind a shaped bridge (``netns``),
incast on the kernel's own TCP (``linux``), real gloo ranks in the namespaces (``_gloo_push``,
``linux_ring``) and what a byte costs the CPU on the kernel path (``cpu_cost``). Chapter 6 and
the Linux appendix; needs root and network namespaces."""
