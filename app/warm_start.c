/* warm_start.c - see warm_start.h. */
#include "warm_start.h"

#include "user_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/timer.h"

#define DECAY 0.5            /* each earlier run weighs half the next one */
#define SAVE_EVERY_NS (30ull * 1000000000ull)

static char usage_path[4096];
static char model_id[256];
static uint64_t last_save_ns;
static const char *run_cmd = "";

const char *warm_start_path(void) { return usage_path; }

/* The model's id: its file name (letters, digits, '.', '_', '-' kept,
 * others as '_') and a hash of its size and modification time, so a
 * rewritten file starts a new history. */
static bool make_id(const char *path, char *out, size_t cap)
{
    uint64_t size;
    int64_t mt_s, mt_ns;
    if (!sl_file_stamp(path, &size, &mt_s, &mt_ns)) return false;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char name[120];
    size_t n = 0;
    for (const char *c = base; *c && n + 1 < sizeof name; c++) {
        const bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                        (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-';
        name[n++] = ok ? *c : '_';
    }
    name[n] = '\0';
    uint64_t h = 0xcbf29ce484222325ull;
    const uint64_t parts[3] = {size, (uint64_t)mt_s, (uint64_t)mt_ns};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (parts[i] >> (8 * b)) & 0xff;
            h *= 0x100000001b3ull;
        }
    return snprintf(out, cap, "%s-%016llx", n ? name : "model", (unsigned long long)h) <
           (int)cap;
}

void warm_start_begin(const char *cmd, sl_model *m, const char *path, bool preload)
{
    usage_path[0] = '\0';
    run_cmd = cmd;
    sl_stream_stats st;
    sl_model_stream_stats(m, &st);
    if (!st.streaming) return;
    char dir[3800];
    if (!make_id(path, model_id, sizeof model_id) || !user_cache_dir(dir, sizeof dir)) return;
    snprintf(usage_path, sizeof usage_path, "%s/%s.usage", dir, model_id);
    bool found;
    sl_err err;
    if (sl_model_usage_start(m, usage_path, model_id, DECAY, preload, &found, &err))
        fprintf(stderr, "sluice %s: warning: ignoring the expert usage history: %s (it is "
                "rewritten at the end of this run)\n", cmd, err.msg);
    last_save_ns = sl_now_ns();
}

void warm_start_save(const char *cmd, sl_model *m, bool force)
{
    if (!usage_path[0]) return;
    if (!cmd) cmd = run_cmd;
    const uint64_t now = sl_now_ns();
    if (!force && now - last_save_ns < SAVE_EVERY_NS) return;
    last_save_ns = now;
    char dir[3800];
    sl_err err;
    if (user_cache_dir(dir, sizeof dir) && sl_model_usage_save(m, usage_path, &err))
        fprintf(stderr, "sluice %s: warning: could not save the expert usage history: %s\n",
                cmd, err.msg);
}
