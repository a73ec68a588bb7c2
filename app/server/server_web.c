/* server_web.c - the page `sluice serve` answers at GET / (server.h): the
 * chat and telemetry page of app/server/web/ui.html, built into the binary (the
 * Makefile turns the file into build/gen/web_ui.inc with scripts/embed.sh),
 * so the page needs no file and no network at run time. */
#include "server.h"

/* the page's bytes, and a NUL (so that the array is never empty) */
static const unsigned char page[] = {
#include "web_ui.inc"
    0};

const char *srv_web_page(size_t *len)
{
    *len = sizeof page - 1;
    return (const char *)page;
}
