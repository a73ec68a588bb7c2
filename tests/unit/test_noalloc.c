/* test_noalloc.c - decoding allocates nothing: after the session is created
 * and the prompt evaluated, every further token (resident, and streamed
 * through the expert cache with its I/O lanes) runs without a single
 * malloc/calloc/realloc anywhere in the process. Counted with the
 * sanitizer allocator's hooks, so this test runs in the ASan build. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/testutil.h"
#include "synth/synth.h"
#include "sluice.h"
#include "test.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
/* from the sanitizer runtime's allocator interface (gcc ships no header) */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
#define HAVE_HOOKS 1
#endif

static atomic_long allocs;
static atomic_int counting;

#ifdef HAVE_HOOKS
static void on_malloc(const volatile void *ptr, size_t size)
{
    (void)ptr;
    (void)size;
    if (atomic_load(&counting)) atomic_fetch_add(&allocs, 1);
}
static void on_free(const volatile void *ptr) { (void)ptr; }
#endif

static char path[512];

static long decode_allocations(sl_stream_mode mode, int cache_experts)
{
    sl_model_params mp = sl_model_default_params();
    mp.stream = mode;
    mp.cache_experts = cache_experts;
    mp.n_threads = 2;
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, path, &mp, &err)) {
        fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 8;
    sl_session *s;
    if (sl_session_create(&s, m, &sp, &err)) {
        sl_model_free(m);
        return -1;
    }
    int32_t prompt[8] = {5, 17, 300, 41, 7, 260, 99, 12};
    long n = -1;
    if (sl_session_eval(s, prompt, 8, &err) == 0) {
        /* threads created at load (I/O lanes) allocate in their own start-up
         * (the sanitizer's thread init) whenever the OS first runs them; give
         * them time so only decode itself is counted */
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        atomic_store(&allocs, 0);
        atomic_store(&counting, 1);
        int rc = 0;
        for (int i = 0; i < 16 && !rc; i++) {
            int32_t t = (int32_t)((i * 131 + 7) % sl_model_n_vocab(m));
            rc = sl_session_eval(s, &t, 1, &err);
        }
        atomic_store(&counting, 0);
        n = rc ? -1 : atomic_load(&allocs);
    }
    sl_session_free(s);
    sl_model_free(m);
    return n;
}

TEST(hooks_see_allocations)
{
    atomic_store(&allocs, 0);
    atomic_store(&counting, 1);
    void *volatile p = malloc(100);
    atomic_store(&counting, 0);
    free(p);
    CHECK(atomic_load(&allocs) == 1);
}

TEST(resident_decode_allocates_nothing)
{
    long n = decode_allocations(SL_STREAM_OFF, 0);
    CHECK_MSG(n == 0, "%ld allocations during 16 decode steps", n);
}

TEST(streamed_decode_allocates_nothing)
{
    long n = decode_allocations(SL_STREAM_ON, 3); /* 8 experts x 2 layers, top-2: misses */
    CHECK_MSG(n == 0, "%ld allocations during 16 decode steps", n);
}

int main(void)
{
#ifndef HAVE_HOOKS
    printf("this test needs the ASan build (make check builds it so)\n0 passed, 1 failed\n");
    return 1;
#else
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
    sl_synth_config c;
    sl_err err;
    t_path(path, sizeof path, "noalloc.gguf");
    if (sl_synth_config_init(&c, "qwen3moe", "tiny", &err) || sl_synth_config_validate(&c, &err) ||
        sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(hooks_see_allocations);
    RUN(resident_decode_allocates_nothing);
    RUN(streamed_decode_allocates_nothing);
    /* the hybrid: gated DeltaNet layers keep their state in the session too */
    t_path(path, sizeof path, "noalloc-qwen35moe.gguf");
    if (sl_synth_config_init(&c, "qwen35moe", "tiny", &err) ||
        sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        printf("  qwen35moe: %s\n", err.msg);
        t_failed++;
        return TEST_REPORT();
    }
    RUN(resident_decode_allocates_nothing);
    RUN(streamed_decode_allocates_nothing);
    return TEST_REPORT();
#endif
}
