//go:build llamacpp

#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "_cgo_export.h"
#include "ggml-cpu.h"

static void structgen_log(enum ggml_log_level level, const char *text, void *user_data) {
	(void)user_data;
	structgenLlamaLog((int)level, (char *)text);
}

void structgen_log_install(void) {
	llama_log_set(structgen_log, NULL);
}

static bool structgen_progress(float progress, void *user_data) {
	return structgenLlamaProgress(progress, user_data);
}

void structgen_set_progress(struct llama_model_params *p, void *user_data) {
	p->progress_callback = structgen_progress;
	p->progress_callback_user_data = user_data;
}

int64_t structgen_vocab_table(const struct llama_vocab *vocab, char *buf, int64_t cap,
                              int64_t *ends, int32_t *attrs, uint8_t *eog) {
	// The longest token of any known vocabulary is a few hundred bytes;
	// longer ones are measured first and copied in a second call.
	char tmp[1024];
	int32_t n = llama_vocab_n_tokens(vocab);
	int64_t off = 0;
	for (int32_t i = 0; i < n; i++) {
		int32_t len = llama_token_to_piece(vocab, i, tmp, (int32_t)sizeof tmp, 0, true);
		const char *src = tmp;
		char *big = NULL;
		if (len < 0) {
			int32_t need = -len;
			big = (char *)malloc((size_t)need);
			if (big == NULL) {
				return -1;
			}
			len = llama_token_to_piece(vocab, i, big, need, 0, true);
			if (len != need) {
				free(big);
				return -1;
			}
			src = big;
		}
		if (off + len <= cap) {
			memcpy(buf + off, src, (size_t)len);
		}
		free(big);
		off += len;
		ends[i] = off;
		attrs[i] = (int32_t)llama_vocab_get_attr(vocab, i);
		eog[i] = llama_vocab_is_eog(vocab, i) ? 1 : 0;
	}
	return off;
}

struct ggml_threadpool *structgen_attach_threadpool(struct llama_context *ctx, int n) {
	struct ggml_threadpool_params p = ggml_threadpool_params_default(n);
	p.poll = 0;
	struct ggml_threadpool *tp = ggml_threadpool_new(&p);
	if (tp != NULL) {
		llama_attach_threadpool(ctx, tp, tp);
	}
	return tp;
}

void structgen_free_threadpool(struct ggml_threadpool *tp) {
	ggml_threadpool_free(tp);
}
