// C helpers for package llamacpp (build tag llamacpp). The package's Go files
// with //export may only declare C functions, so the definitions live in
// shim.c.
#ifndef STRUCTGEN_LLAMACPP_SHIM_H
#define STRUCTGEN_LLAMACPP_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include "llama.h"

// Routes llama.cpp's and ggml's log output to the Go function
// structgenLlamaLog (log.go).
void structgen_log_install(void);

// Sets the progress callback of p to call the Go function
// structgenLlamaProgress (progress.go) with user_data.
void structgen_set_progress(struct llama_model_params *p, void *user_data);

// Renders every token of vocab (special tokens as their text) into buf and
// writes, for token i, its bytes' end offset to ends[i], its attribute bits
// to attrs[i] and whether it ends generation to eog[i]. Returns the total
// number of bytes the pieces need; when that is more than cap, buf holds
// only a prefix and the caller retries with a larger buffer. Returns -1 if
// llama.cpp fails to render a token.
int64_t structgen_vocab_table(const struct llama_vocab *vocab, char *buf, int64_t cap,
                              int64_t *ends, int32_t *attrs, uint8_t *eog);

// Creates a CPU thread pool of n threads that do not poll for work
// between graphs (poll 0: they sleep at once), attaches it to ctx and
// returns it (NULL on failure: ctx keeps llama.cpp's own pool).
struct ggml_threadpool *structgen_attach_threadpool(struct llama_context *ctx, int n);

// Frees a pool made by structgen_attach_threadpool (after llama_free).
void structgen_free_threadpool(struct ggml_threadpool *tp);

#endif
