#!/usr/bin/env bash
# Regenerates the fuzzing seeds in tests/fuzz/corpus: the hand-made valid and
# corrupt files of test_gguf_corrupt and the small files test_gguf writes
# (every value type, tensors of several types, a split pair). Keep the total
# under 200 KB; commit the result.
set -eu
cd "$(dirname "$0")/../.."
make -s build/san/tests/test_gguf build/san/tests/test_gguf_corrupt
rm -rf tests/fuzz/corpus
mkdir -p tests/fuzz/corpus
SL_GGUF_CORPUS_DIR=tests/fuzz/corpus build/san/tests/test_gguf_corrupt >/dev/null
SL_GGUF_CORPUS_DIR=tests/fuzz/corpus build/san/tests/test_gguf >/dev/null
echo "$(ls tests/fuzz/corpus | wc -l) files, $(du -sb tests/fuzz/corpus | cut -f1) bytes in tests/fuzz/corpus"
