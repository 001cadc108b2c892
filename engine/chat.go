package engine

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoChatTemplate reports WithChat on a model without a chat template.
var ErrNoChatTemplate = errors.New("engine: the model has no chat template")

// ErrUnknownChatTemplate reports a chat template of a family FormatChat
// does not know.
var ErrUnknownChatTemplate = errors.New("engine: unsupported chat template")

// FormatChat renders a system message (optional) and one user message in
// the chat format of template (the model's Jinja chat template), ending
// where the assistant's answer starts. Like llama.cpp's
// llama_chat_apply_template it does not run Jinja: it recognizes the
// template's family by its markers and writes that family's format:
//
//	Llama 3      <|start_header_id|>   (Llama 3.x Instruct)
//	ChatML       <|im_start|>          (Qwen, Hermes, many fine-tunes)
//	Gemma        <start_of_turn>       (system text goes into the user turn)
//	Phi-3        <|user|> ... <|end|>
//	Mistral      [INST]                (Llama 2, Mistral: system text before the user's)
//
// The result holds special-token text (parse it with parseSpecial) and no
// BOS: tokenizing with addSpecial adds it.
func FormatChat(template, system, user string) (string, error) {
	if template == "" {
		return "", ErrNoChatTemplate
	}
	var b strings.Builder
	switch {
	case strings.Contains(template, "<|start_header_id|>"):
		if system != "" {
			fmt.Fprintf(&b, "<|start_header_id|>system<|end_header_id|>\n\n%s<|eot_id|>", strings.TrimSpace(system))
		}
		fmt.Fprintf(&b, "<|start_header_id|>user<|end_header_id|>\n\n%s<|eot_id|>", strings.TrimSpace(user))
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	case strings.Contains(template, "<|im_start|>"):
		if system != "" {
			fmt.Fprintf(&b, "<|im_start|>system\n%s<|im_end|>\n", system)
		}
		fmt.Fprintf(&b, "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", user)
	case strings.Contains(template, "<start_of_turn>"):
		if system != "" {
			user = system + "\n\n" + user
		}
		fmt.Fprintf(&b, "<start_of_turn>user\n%s<end_of_turn>\n<start_of_turn>model\n", strings.TrimSpace(user))
	case strings.Contains(template, "<|user|>") && strings.Contains(template, "<|end|>"):
		if system != "" {
			fmt.Fprintf(&b, "<|system|>\n%s<|end|>\n", system)
		}
		fmt.Fprintf(&b, "<|user|>\n%s<|end|>\n<|assistant|>\n", user)
	case strings.Contains(template, "[INST]"):
		if system != "" {
			user = system + "\n\n" + user
		}
		fmt.Fprintf(&b, "[INST] %s [/INST]", strings.TrimSpace(user))
	default:
		head := template
		if len(head) > 40 {
			head = head[:40] + "…"
		}
		return "", fmt.Errorf("%w (starts %q): format the prompt yourself", ErrUnknownChatTemplate, head)
	}
	return b.String(), nil
}
