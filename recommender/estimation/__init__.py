"""Estimation: memory per GPU, the layout that holds a workload, and how long it trains.

Memory (``memory``, ``model_states``, ``activations``, ``zero3``, ``fp8``, ``frameworks``,
``capacity``), the strategy ladder and layout search (``strategies``, ``topology``,
``layouts``, ``plan``, ``parallelism``), and time (``steptime``, ``parallel_time``,
``throughput``, ``efficiency``, ``links``, ``global_batch``, ``finetune_speed``, ``posttrain``,
``rollout``, ``scaling``). No prices here.
"""
