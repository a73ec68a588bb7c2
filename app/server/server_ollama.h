/* server_ollama.h - the Ollama API of `sluice serve`, on the same port as
 * the OpenAI and Anthropic ones (server_ollama.c).
 *
 * GET /api/version, /api/tags, /api/ps; POST /api/show, /api/chat,
 * /api/generate. Generation goes through the same request -> job path as
 * the other APIs (server_prompt.c); a stream is NDJSON, one object a line.
 * Errors are {"error": "..."}. The endpoints of model management and
 * embeddings answer 501 with what to do instead. */
#ifndef SL_APP_SERVER_OLLAMA_H
#define SL_APP_SERVER_OLLAMA_H

#include <stdbool.h>

#include "server.h"

/* The facts of the model m, loaded from path, that /api/show and /api/tags
 * give (server_ollama_facts.c):
 * its header's scalar metadata (model_info), the parameter count (from the
 * tensor table when the header has none), the quantization named after
 * general.file_type, the size of its file(s), a stable digest (a hash of
 * the name, size and header counts, not the file's sha256) and the chat
 * template's text. A new JSON object for srv.model_facts (the caller owns
 * it), or NULL when m or path is NULL or memory runs out (the answers then leave those
 * fields empty). */
json_t *srv_ollama_facts(const sl_model *m, const char *path);

srv_reply srv_ollama_version(srv *s);
srv_reply srv_ollama_tags(srv *s);
srv_reply srv_ollama_ps(srv *s);
srv_reply srv_ollama_show(srv *s, json_t *body);
srv_reply srv_ollama_chat(srv *s, json_t *body);
srv_reply srv_ollama_generate(srv *s, json_t *body);

/* Whether url (a tidied path) is an Ollama endpoint this server cannot
 * serve (embeddings, pull, push, create, copy, delete, blobs), which
 * srv_ollama_refused answers (501, why and what to use instead) whatever
 * the method. */
bool srv_ollama_refusable(const char *url);
srv_reply srv_ollama_refused(srv *s, const char *url);

#endif
