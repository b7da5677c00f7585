"""Congestion-aware fabrics: a model of switches and transports, and the real Linux stack in network namespaces."""
