"""caramel's own small training workloads: a decoder-only GPT and a ResNet in plain PyTorch.

They read Megatron-style (GPT) and tf_cnn_benchmarks-style (ResNet) arguments and print those tools'
log lines, so one benchmark file analyses Megatron-LM on a GPU system and these on a laptop.
"""
