#!/usr/bin/env bash
# GenAI-Perf against the Dynamo frontend: 4000 in / 500 out, 128 concurrent users.
genai-perf profile -m nvidia/Llama-3.1-70B-Instruct-FP8 --url localhost:8000 \
  --endpoint-type chat --streaming \
  --synthetic-input-tokens-mean 4000 --synthetic-input-tokens-stddev 0 \
  --output-tokens-mean 500 --output-tokens-stddev 0 \
  --extra-inputs ignore_eos:true --extra-inputs max_tokens:500 \
  --concurrency 128 --request-count 1280 --warmup-request-count 16
