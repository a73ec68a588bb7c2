# sluice - build, test, demo, fuzz.
#
#   make            optimised build: build/rel/sluice
#   make test       install deps if missing, build with ASan+UBSan, run the suite
#   make check      the suite as it is (ASan+UBSan unit tests, CLI scripts, TSan)
#   make check-fast the unit tests only, release build (no sanitizers, no CLI)
#   make demo       install deps if missing, build, generate the demo model, run it
#   make fuzz       libFuzzer on the GGUF parser for FUZZ_SECONDS (default 60)
#   make fuzz-model libFuzzer on generated valid models, run resident and streamed
#   make fuzz-session libFuzzer on loading session files (prompt caches, slot saves)
#   make fuzz-http  libFuzzer on the server's request bodies, then mutated raw
#                   requests at a running server (loopback)
#   make tsan       ThreadSanitizer build of the threaded tests
#   make ARCH=aarch64  cross-build build/aarch64/sluice and the aarch64 unit tests
#   make test-aarch64  run the aarch64 subset under qemu-aarch64 (two cpu models)
#
# Floating point: -ffp-contract=off for both compilers (gcc already does
# this in ISO C mode, clang would fuse a*b+c within an expression), so the
# release and sanitizer builds compute the same bits; the kernels write the
# fused multiply-adds the reference uses out as fmaf / _mm256_fmadd_ps.
#
# Portable by default: no -march=native. SIMD kernels live in *_avx2.c files
# that alone are compiled with AVX2/FMA flags and are chosen at run time.
# Two compilers see every file: the release and ThreadSanitizer builds use
# CC (gcc here), the ASan+UBSan build of the suite uses clang when present
# (SAN_CC; its UBSan also flags arithmetic on null pointers, which gcc's
# does not).

CC      ?= cc
HOST_ARCH := $(shell uname -m)
ARCH    := $(HOST_ARCH)
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CSTD    := -std=c11 -D_GNU_SOURCE -ffp-contract=off
# generated sources (the server's page as a C array: build/gen/web_ui.inc)
GEN     := build/gen
INC     := -Isrc -Iinclude -I$(GEN)
OPT     ?= -O2 -g
DEPFLAGS = -MMD -MP

HAVE_URING := $(shell pkg-config --exists liburing 2>/dev/null && echo 1)
# JSON (jansson) for every JSON sluice reads or writes; HTTP (libmicrohttpd)
# for `sluice serve`
JSON_CFLAGS := $(shell pkg-config --cflags jansson 2>/dev/null)
JSON_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)
HTTP_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
HTTP_LIBS   := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
INC     += $(JSON_CFLAGS) $(HTTP_CFLAGS)
LIBS    := -lpcre2-8 $(JSON_LIBS) $(HTTP_LIBS) -lpthread -lm
ifeq ($(HAVE_URING),1)
  LIBS   += -luring
  CDEFS  += -DSL_HAVE_URING=1
endif

ifeq ($(HOST_ARCH),x86_64)
  SIMD_AVX2 := -mavx2 -mfma -mf16c -mbmi2
endif

# *_win.c: the Windows platform files (mk/windows.mk)
LIB_SRC  := $(sort $(filter-out %_win.c,$(wildcard src/*/*.c src/families/*/*.c)))
APP_SRC  := $(sort $(wildcard app/*.c app/server/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_COMMON := $(sort $(wildcard tests/common/*.c))

SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_CC ?= $(if $(shell command -v clang 2>/dev/null),clang,$(CC))

# the threaded tests again under ThreadSanitizer (defined here: `check` needs them)
TSAN := build/tsan
TSAN_FLAGS := -O1 -g -fsanitize=thread
TSAN_SRC := $(sort $(wildcard tests/unit/test_threads*.c tests/unit/test_io*.c tests/unit/test_stream*.c))
TSAN_LIB_OBJ := $(LIB_SRC:%.c=$(TSAN)/%.o)
TSAN_COMMON_OBJ := $(TEST_COMMON:%.c=$(TSAN)/%.o)
TSAN_TESTS := $(TSAN_SRC:tests/unit/%.c=$(TSAN)/tests/%)

# The object rules of a build directory, written once: obj_rules(DIR, CC_VAR,
# FLAGS_VAR, PLAIN_EXTRA) compiles %.c to DIR/%.o with $(CC_VAR) $(FLAGS_VAR)
# (PLAIN_EXTRA added for all but *_avx2.c, which alone get the AVX2 flags).
# The variables are named, not expanded, so they keep make's late expansion.
define obj_rules
$(1)/%_avx2.o: %_avx2.c
	@mkdir -p $$(dir $$@)
	$$($(2)) $$($(3)) $$(DEPFLAGS) $$(SIMD_AVX2) -c $$< -o $$@

$(1)/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$($(2)) $$($(3)) $(4) $$(DEPFLAGS) -c $$< -o $$@
endef

# ---- release build ----------------------------------------------------------
REL := build/rel
REL_LIB_OBJ := $(LIB_SRC:%.c=$(REL)/%.o)
REL_APP_OBJ := $(APP_SRC:%.c=$(REL)/%.o)

# `make ARCH=aarch64` on another host: the cross build only (mk/aarch64.mk)
ifneq ($(ARCH),$(HOST_ARCH))
all: aarch64
else
all: $(REL)/sluice
endif

REL_CFLAGS = $(CSTD) $(WARN) $(OPT) $(CDEFS) $(INC)
$(eval $(call obj_rules,$(REL),CC,REL_CFLAGS,))

$(REL)/libsluice.a: $(REL_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(REL)/sluice: $(REL_APP_OBJ) $(REL)/libsluice.a
	$(CC) $(OPT) -o $@ $(REL_APP_OBJ) $(REL)/libsluice.a $(LIBS)

# ---- sanitizer build (used by the suite) ------------------------------------
SAN := build/san
SAN_LIB_OBJ := $(LIB_SRC:%.c=$(SAN)/%.o)
SAN_APP_OBJ := $(APP_SRC:%.c=$(SAN)/%.o)
SAN_COMMON_OBJ := $(TEST_COMMON:%.c=$(SAN)/%.o)
SAN_TESTS := $(TEST_SRC:tests/unit/%.c=$(SAN)/tests/%)

SAN_CFLAGS = $(CSTD) $(WARN) $(SAN_FLAGS) $(CDEFS) $(INC)
$(eval $(call obj_rules,$(SAN),SAN_CC,SAN_CFLAGS,-Itests))

$(SAN)/libsluice.a: $(SAN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(SAN)/sluice: $(SAN_APP_OBJ) $(SAN)/libsluice.a
	$(SAN_CC) $(SAN_FLAGS) -o $@ $(SAN_APP_OBJ) $(SAN)/libsluice.a $(LIBS)

$(SAN)/tests/%: $(SAN)/tests/unit/%.o $(SAN_COMMON_OBJ) $(SAN)/libsluice.a
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_FLAGS) -o $@ $< $(SAN_COMMON_OBJ) $(SAN)/libsluice.a $(LIBS)

CLI_TESTS := $(sort $(wildcard tests/cli/*.sh))

# a program under a seccomp filter, as Android runs apps (tests/cli/phone_traps.sh)
$(REL)/tools/seccomp_wrap: tests/tools/seccomp_wrap.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) -o $@ $<

check: $(SAN_TESTS) $(SAN)/sluice $(REL)/sluice $(TSAN_TESTS) $(REL)/tools/seccomp_wrap
	SLUICE=$(abspath $(SAN)/sluice) SLUICE_REL=$(abspath $(REL)/sluice) \
	  ./tests/run.sh $(SAN_TESTS) $(CLI_TESTS) $(TSAN_TESTS)

# ---- the unit tests on the release build (check-fast) -------------------------
# The same tests/unit binaries, optimised and without sanitizers, and no CLI
# scripts: a quick answer while working (docs/testing.md has both times).
REL_COMMON_OBJ := $(TEST_COMMON:%.c=$(REL)/%.o)
# (not test_noalloc: it counts allocations through the sanitizer allocator's hooks)
REL_TESTS := $(filter-out $(REL)/tests/test_noalloc,$(TEST_SRC:tests/unit/%.c=$(REL)/tests/%))
$(REL)/tests/%.o: REL_CFLAGS += -Itests

$(REL)/tests/%: $(REL)/tests/unit/%.o $(REL_COMMON_OBJ) $(REL)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -o $@ $< $(REL_COMMON_OBJ) $(REL)/libsluice.a $(LIBS)

check-fast: $(REL_TESTS)
	./tests/run.sh $(REL_TESTS)

deps:
	@./scripts/install-deps.sh

test: deps
	$(MAKE) check

# ---- demo -------------------------------------------------------------------
DEMO_MODEL ?= models/demo-qwen3moe.gguf

demo: deps
	$(MAKE) all
	./scripts/demo.sh $(REL)/sluice $(DEMO_MODEL)

# ---- fuzzing (clang + libFuzzer) ----------------------------------------------
# Three targets. fuzz_gguf, on the GGUF reader, links only the modules the
# reader needs (gguf, quant, util), so a half-written file elsewhere cannot
# break it. fuzz_model turns its input into a valid small model and runs it
# resident and streamed (tests/fuzz/fuzz_model.c): it links the whole
# library, as fuzz_session does, which loads mutated session files
# (tests/fuzz/fuzz_session.c; its seeds are made at start-up, new inputs go
# to build/fuzz/corpus_session, findings are session-crash-* ...). *_avx2.c alone get the AVX2 flags, as in the other builds. New
# inputs go to build/fuzz/corpus (corpus_model); the committed seeds in
# tests/fuzz/corpus (corpus_model) are read, never written. Findings land in
# build/fuzz/ as crash-*/leak-*/timeout-* files (model-crash-* ...).
FUZZ_SECONDS ?= 60
FUZZ := build/fuzz
FUZZ_CC ?= clang
FUZZ_SRC := $(sort $(filter-out %_win.c,$(wildcard src/gguf/*.c src/quant/*.c src/util/*.c)))
FUZZ_OBJ := $(FUZZ_SRC:%.c=$(FUZZ)/%.o) $(FUZZ)/tests/fuzz/fuzz_gguf.o
FUZZ_MODEL_OBJ := $(LIB_SRC:%.c=$(FUZZ)/%.o) $(FUZZ)/tests/fuzz/fuzz_model.o
FUZZ_SESSION_OBJ := $(LIB_SRC:%.c=$(FUZZ)/%.o) $(FUZZ)/tests/fuzz/fuzz_session.o
# fuzz_http links the server's sources too (not main.c: libFuzzer has main)
FUZZ_HTTP_OBJ := $(LIB_SRC:%.c=$(FUZZ)/%.o) \
  $(filter-out $(FUZZ)/app/main.o,$(APP_SRC:%.c=$(FUZZ)/%.o)) $(FUZZ)/tests/fuzz/fuzz_http.o
FUZZ_CFLAGS := $(CSTD) $(CDEFS) $(INC) -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
  -fsanitize-coverage-ignorelist=tests/fuzz/coverage_ignore.txt
FUZZ_FLAGS ?= -max_len=65536 -timeout=10 -rss_limit_mb=2048 -use_value_profile=1 \
  -dict=tests/fuzz/gguf.dict -artifact_prefix=$(FUZZ)/
FUZZ_MODEL_FLAGS ?= -max_len=256 -timeout=60 -rss_limit_mb=2048 \
  -artifact_prefix=$(FUZZ)/model-
FUZZ_SESSION_FLAGS ?= -max_len=4096 -timeout=20 -rss_limit_mb=2048 \
  -artifact_prefix=$(FUZZ)/session-
FUZZ_HTTP_FLAGS ?= -max_len=8192 -timeout=30 -rss_limit_mb=2048 \
  -dict=tests/fuzz/http.dict -artifact_prefix=$(FUZZ)/http-

$(eval $(call obj_rules,$(FUZZ),FUZZ_CC,FUZZ_CFLAGS,))

$(FUZZ)/fuzz_gguf: $(FUZZ_OBJ)
$(FUZZ)/fuzz_model: $(FUZZ_MODEL_OBJ)
$(FUZZ)/fuzz_session: $(FUZZ_SESSION_OBJ)
$(FUZZ)/fuzz_http: $(FUZZ_HTTP_OBJ)
$(FUZZ)/fuzz_gguf $(FUZZ)/fuzz_model $(FUZZ)/fuzz_session $(FUZZ)/fuzz_http:
	$(FUZZ_CC) -g -fsanitize=fuzzer,address,undefined -o $@ $^ $(LIBS)

fuzz: deps $(FUZZ)/fuzz_gguf
	@mkdir -p $(FUZZ)/corpus
	$(FUZZ)/fuzz_gguf -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) \
	  $(FUZZ)/corpus tests/fuzz/corpus

fuzz-model: deps $(FUZZ)/fuzz_model
	@mkdir -p $(FUZZ)/corpus_model
	$(FUZZ)/fuzz_model -max_total_time=$(FUZZ_SECONDS) $(FUZZ_MODEL_FLAGS) \
	  $(FUZZ)/corpus_model tests/fuzz/corpus_model

fuzz-session: deps $(FUZZ)/fuzz_session
	@mkdir -p $(FUZZ)/corpus_session
	$(FUZZ)/fuzz_session -max_total_time=$(FUZZ_SECONDS) $(FUZZ_SESSION_FLAGS) \
	  $(FUZZ)/corpus_session

# half the time on request bodies (libFuzzer), half on raw requests to a
# running sanitizer-built server (tests/cli/lib/fuzz_http_raw.py)
fuzz-http: deps $(FUZZ)/fuzz_http $(SAN)/sluice
	@mkdir -p $(FUZZ)/corpus_http
	$(FUZZ)/fuzz_http -max_total_time=$$(( $(FUZZ_SECONDS) / 2 )) $(FUZZ_HTTP_FLAGS) \
	  $(FUZZ)/corpus_http tests/fuzz/corpus_http
	FUZZ_HTTP_SECONDS=$$(( $(FUZZ_SECONDS) / 2 )) SLUICE=$(abspath $(SAN)/sluice) \
	  ./tests/cli/fuzz_http_brief.sh --raw-only

# ---- thread sanitizer ----------------------------------------------------------
# The threaded tests (pool, I/O lanes, streamer) again under ThreadSanitizer;
# part of `make check`.

TSAN_CFLAGS = $(CSTD) $(WARN) $(TSAN_FLAGS) $(CDEFS) $(INC)
$(eval $(call obj_rules,$(TSAN),CC,TSAN_CFLAGS,-Itests))

$(TSAN)/libsluice.a: $(TSAN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(TSAN)/tests/%: $(TSAN)/tests/unit/%.o $(TSAN_COMMON_OBJ) $(TSAN)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_FLAGS) -o $@ $< $(TSAN_COMMON_OBJ) $(TSAN)/libsluice.a $(LIBS)

tsan: $(TSAN_TESTS)
	./tests/run.sh $(TSAN_TESTS)

include mk/aarch64.mk
include mk/windows.mk

# ---- the server's page, built in: app/server/web/ui.html as a C array that
# app/server/server_web.c includes (every build that compiles that file) ----------------
$(GEN)/web_ui.inc: app/server/web/ui.html scripts/embed.sh
	@mkdir -p $(dir $@)
	./scripts/embed.sh $< >$@.tmp && mv $@.tmp $@

$(foreach d,$(REL) $(SAN) $(TSAN) $(FUZZ) $(A64) $(WIN),$(d)/app/server/server_web.o): $(GEN)/web_ui.inc

# ---- bench (micro-benchmarks; not part of the suite) ---------------------------
# bench/<name>.c -> build/rel/bench/<name>, linked against the release library
# (not bench/llama_*.c: they link llama.cpp's libraries, built by their scripts).
BENCH_SRC := $(sort $(filter-out bench/llama_%.c,$(wildcard bench/*.c)))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(REL)/bench/%)

$(REL)/bench/%: bench/%.c $(REL)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) $(CDEFS) $(INC) -o $@ $< $(REL)/libsluice.a $(LIBS)

bench: $(BENCH_BIN)

clean:
	rm -rf build

.PHONY: all check check-fast deps test demo fuzz fuzz-model fuzz-session fuzz-http tsan clean bench \
  aarch64 test-aarch64
.SECONDARY:

-include $(shell find build -name '*.d' 2>/dev/null)
