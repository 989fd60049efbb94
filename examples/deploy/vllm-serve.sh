#!/usr/bin/env bash
# Llama-3.1-70B-Instruct (ModelOpt FP8 checkpoint) on 8 x H200 with vLLM: one TP8 server.
# Predict it:  llm-codesign estimate -g h200-sxm \
#                --from examples/deploy/vllm-serve.sh --from examples/deploy/vllm-bench.sh
vllm serve nvidia/Llama-3.1-70B-Instruct-FP8 \
  --host 0.0.0.0 --port 8000 \
  --tensor-parallel-size 8 \
  --kv-cache-dtype fp8 \
  --gpu-memory-utilization 0.9 \
  --max-num-seqs 256 \
  --max-num-batched-tokens 8192 \
  --max-model-len 4096 \
  --enable-chunked-prefill \
  --disable-log-requests \
  --trust-remote-code
