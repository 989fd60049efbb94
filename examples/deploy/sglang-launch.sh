#!/usr/bin/env bash
# DeepSeek-R1 (its own FP8 block-scaled checkpoint) on 8 x H200 with SGLang: DP attention, EP 8.
# Predict it:  llm-codesign estimate -g h200-sxm \
#                --from examples/deploy/sglang-launch.sh --from examples/deploy/sglang-bench.sh
python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 \
  --host 0.0.0.0 --port 30000 --trust-remote-code \
  --tp 8 --dp 8 --enable-dp-attention --ep 8 \
  --mem-fraction-static 0.85 \
  --max-running-requests 1024 \
  --chunked-prefill-size 8192 \
  --cuda-graph-max-bs 128 \
  --kv-cache-dtype fp8_e4m3 \
  --disable-radix-cache
