#!/usr/bin/env bash
# DeepSeek-R1 (NVFP4 checkpoint) on 8 x B200 with TensorRT-LLM: attention DP + wide EP, MTP 1.
# Predict it:  llm-codesign estimate -g b200 --spec-acceptance 0.7 \
#                --from examples/deploy/trtllm-serve.sh --from examples/deploy/trtllm-bench.sh
trtllm-serve nvidia/DeepSeek-R1-FP4 \
  --host 0.0.0.0 --port 8000 \
  --backend pytorch \
  --trust_remote_code \
  --extra_llm_api_options trtllm-extra.yaml
