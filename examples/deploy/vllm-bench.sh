#!/usr/bin/env bash
# vLLM's serving benchmark: 2048 in / 512 out at 64 concurrent users.
vllm bench serve --backend vllm --model nvidia/Llama-3.1-70B-Instruct-FP8 \
  --host localhost --port 8000 --dataset-name random \
  --random-input-len 2048 --random-output-len 512 --random-range-ratio 0 \
  --num-prompts 640 --max-concurrency 64 --ignore-eos \
  --percentile-metrics ttft,tpot,itl,e2el
