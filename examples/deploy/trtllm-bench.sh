#!/usr/bin/env bash
# TensorRT-LLM's serving benchmark: 1024 in / 1024 out, 1024 users (128 per attention-DP rank).
python -m tensorrt_llm.serve.scripts.benchmark_serving \
  --backend openai --model nvidia/DeepSeek-R1-FP4 --host localhost --port 8000 \
  --dataset-name random --random-input-len 1024 --random-output-len 1024 \
  --random-prefix-len 0 --random-ids --num-prompts 5120 --max-concurrency 1024 \
  --ignore-eos --tokenize-on-client --percentile-metrics ttft,tpot,itl,e2el
