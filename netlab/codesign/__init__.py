"""Co-design of the network and the model: the capstone's step predictor (``capstone``), in-network
aggregation (``ina``) and model parallelism (``parallel``: tensor and pipeline). Chapter 8."""
