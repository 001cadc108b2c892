package cpu

import (
	"fmt"
	"math"
	"strings"
)

// Params configures a Chain. Temperature 0 means greedy, and every other
// field's zero value means "off" (or, for a sub-setting of a feature that
// is on, llama.cpp's default), so Params{Temperature: 1, TopK: 40} is
// exactly top-k 40 followed by sampling. NewChain maps the zero values to
// llama.cpp's neutral values (top-p 1, typical-p 1, repeat penalty 1, …).
// LlamaDefaults returns llama.cpp's own default settings.
type Params struct {
	// Temperature divides the logits (at the "temperature" position of the
	// order). 0 is greedy: the most likely token after the whole chain.
	Temperature float32
	// DynaTempRange > 0 turns on dynamic temperature: the temperature
	// moves in [Temperature-DynaTempRange, Temperature+DynaTempRange] with
	// the normalised entropy of the candidates, raised to DynaTempExponent
	// (0 → 1).
	DynaTempRange    float32
	DynaTempExponent float32

	TopK      int     // keep the K most likely tokens; 0 = off
	TopP      float32 // nucleus: smallest set with mass ≥ TopP; 0 or 1 = off
	MinP      float32 // drop tokens with p < MinP·p_max; 0 = off
	TypicalP  float32 // locally typical sampling mass; 0 or 1 = off
	TopNSigma float32 // keep logits ≥ max - TopNSigma·σ; 0 = off

	// Penalties over the last RepeatLastN accepted tokens (0 → 64, as in
	// llama.cpp; -1 → the last MaxHistory). RepeatPenalty r is sign-aware
	// (logit ≤ 0: ×r, else ÷r); 0 = off (1). FrequencyPenalty is
	// subtracted once per occurrence, PresencePenalty once per distinct
	// token.
	RepeatLastN      int
	RepeatPenalty    float32
	FrequencyPenalty float32
	PresencePenalty  float32

	// DRY ("don't repeat yourself"): DRYMultiplier > 0 turns it on. A token
	// extending a repeat of length L ≥ DRYAllowedLength (0 → 2) gets
	// logit -= DRYMultiplier·DRYBase^(L-DRYAllowedLength) (DRYBase 0 →
	// 1.75). DRYLastN bounds the scanned history (0 or -1 → MaxHistory).
	// DRYSequenceBreakers are token sequences that restart the repeat
	// search (see DRYSequenceBreakers to derive them from strings).
	DRYMultiplier       float32
	DRYBase             float32
	DRYAllowedLength    int
	DRYLastN            int
	DRYSequenceBreakers [][]int32

	// XTC ("exclude top choices"): with probability XTCProbability, drop
	// every token with p ≥ XTCThreshold (0 → 0.1) except the least likely
	// of them. 0 = off; a threshold above 0.5 disables it, as in llama.cpp.
	XTCProbability float32
	XTCThreshold   float32

	// Mirostat 1 or 2 replaces the whole order by temperature + mirostat
	// (as llama.cpp does). MirostatTau is the target surprise (0 → 5),
	// MirostatEta the learning rate (0 → 0.1).
	Mirostat    int
	MirostatTau float32
	MirostatEta float32

	// MinKeep is the least number of tokens top-p, min-p, typical-p and XTC
	// leave (0 = no minimum, llama.cpp's default).
	MinKeep int

	// LogitBias is added to the logits before every other step.
	LogitBias []LogitBias

	// Seed seeds every random step (each its own mt19937, as llama.cpp):
	// the same seed gives the same tokens for the same logits.
	Seed uint32

	// Samplers is the order of the chain, by llama.cpp's names
	// ("penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p",
	// "min_p", "xtc", "temperature", and its alternative spellings such as
	// "top-k" or "temp"). nil means DefaultOrder. A step whose parameters
	// are off is a no-op wherever it is placed; a step that is on but not
	// named is an error (DropUnordered turns such steps off, which is what
	// llama.cpp's --samplers does).
	Samplers []string

	// Preset selects a whole pipeline: "" or "llama.cpp" is llama.cpp's
	// chain; "akunu" is akunu's fixed pipeline (see the package doc).
	Preset string
}

// LogitBias adds Bias to token Token's logit.
type LogitBias struct {
	Token int32
	Bias  float32
}

// Presets.
const (
	PresetLlamaCpp = "llama.cpp"
	PresetAkunu    = "akunu"
)

// DefaultOrder is llama.cpp's default sampler order (dist always follows).
var DefaultOrder = []string{"penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"}

// LlamaDefaults returns llama.cpp's default sampling settings
// (common_params_sampling): top-k 40, top-p 0.95, min-p 0.05,
// temperature 0.8, penalties over the last 64 tokens at their neutral
// values.
func LlamaDefaults() Params {
	return Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatLastN: 64}
}

// Limits.
const (
	// MaxHistory bounds every token history (penalty window, DRY window):
	// -1 ("the whole context" in llama.cpp) means this many tokens. It is
	// larger than the context of the models this library targets and
	// keeps the preallocated windows at a few hundred KiB.
	MaxHistory = 1 << 16
	// MaxTopK bounds TopK; larger values are certainly a mistake (no
	// vocabulary has 2²⁴ tokens) and would only grow buffers.
	MaxTopK = 1 << 24
)

// canonical sampler names (llama.cpp's common_sampler_types_from_names,
// with its alternative names).
var samplerNames = map[string]string{
	"penalties": "penalties", "dry": "dry",
	"top_n_sigma": "top_n_sigma", "top-n-sigma": "top_n_sigma",
	"top_k": "top_k", "top-k": "top_k",
	"typ_p": "typ_p", "typical-p": "typ_p", "typical": "typ_p", "typ-p": "typ_p", "typ": "typ_p",
	"top_p": "top_p", "top-p": "top_p", "nucleus": "top_p",
	"min_p": "min_p", "min-p": "min_p",
	"xtc":         "xtc",
	"temperature": "temperature", "temp": "temperature",
}

// DropUnordered returns p with every sampler that p.Samplers does not
// name turned off, as llama.cpp's --samplers does (a sampler left out of
// the order is simply not used): its parameters are set to their "off"
// values (Temperature to 1, the identity), so that settings inherited
// from defaults such as LlamaDefaults do not make NewChain reject the
// order. With Samplers nil (the default order, which names every sampler)
// or a Mirostat mode it returns p unchanged; unknown names are left for
// NewChain to report.
func (p Params) DropUnordered() Params {
	if p.Samplers == nil || p.Mirostat != 0 {
		return p
	}
	named := map[string]bool{}
	for _, name := range p.Samplers {
		named[samplerNames[name]] = true
	}
	for name, off := range samplerOff {
		if !named[name] {
			off(&p)
		}
	}
	return p
}

// samplerOff sets each sampler's parameters to their "off" values.
var samplerOff = map[string]func(*Params){
	"penalties":   func(p *Params) { p.RepeatPenalty, p.FrequencyPenalty, p.PresencePenalty = 0, 0, 0 },
	"dry":         func(p *Params) { p.DRYMultiplier = 0 },
	"top_n_sigma": func(p *Params) { p.TopNSigma = 0 },
	"top_k":       func(p *Params) { p.TopK = 0 },
	"typ_p":       func(p *Params) { p.TypicalP = 0 },
	"top_p":       func(p *Params) { p.TopP = 0 },
	"min_p":       func(p *Params) { p.MinP = 0 },
	"xtc":         func(p *Params) { p.XTCProbability = 0 },
	"temperature": func(p *Params) { p.Temperature, p.DynaTempRange = 1, 0 },
}

// ParamError reports an invalid Params field.
type ParamError struct {
	Field string // e.g. "TopP", "Samplers[2]", "LogitBias[0].Token"
	Msg   string
}

func (e *ParamError) Error() string { return "sampling/cpu: Params." + e.Field + ": " + e.Msg }

func perr(field, format string, args ...any) error {
	return &ParamError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func finite(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// normalized is Params with zero values mapped to llama.cpp's values and
// the order resolved to canonical names.
type normalized struct {
	Params
	order []string
}

func (p Params) normalize() (normalized, error) {
	n := normalized{Params: p}
	floats := []struct {
		name string
		v    float32
	}{
		{"Temperature", p.Temperature}, {"DynaTempRange", p.DynaTempRange}, {"DynaTempExponent", p.DynaTempExponent},
		{"TopP", p.TopP}, {"MinP", p.MinP}, {"TypicalP", p.TypicalP}, {"TopNSigma", p.TopNSigma},
		{"RepeatPenalty", p.RepeatPenalty}, {"FrequencyPenalty", p.FrequencyPenalty}, {"PresencePenalty", p.PresencePenalty},
		{"DRYMultiplier", p.DRYMultiplier}, {"DRYBase", p.DRYBase},
		{"XTCProbability", p.XTCProbability}, {"XTCThreshold", p.XTCThreshold},
		{"MirostatTau", p.MirostatTau}, {"MirostatEta", p.MirostatEta},
	}
	for _, f := range floats {
		if !finite(f.v) {
			return n, perr(f.name, "%v is not a finite number", f.v)
		}
	}
	nonNeg := []struct {
		name string
		v    float32
	}{
		{"Temperature", p.Temperature}, {"DynaTempRange", p.DynaTempRange}, {"DynaTempExponent", p.DynaTempExponent},
		{"TopNSigma", p.TopNSigma}, {"RepeatPenalty", p.RepeatPenalty}, {"DRYMultiplier", p.DRYMultiplier},
		{"MirostatTau", p.MirostatTau}, {"MirostatEta", p.MirostatEta},
	}
	for _, f := range nonNeg {
		if f.v < 0 {
			return n, perr(f.name, "%v is negative", f.v)
		}
	}
	unit := []struct {
		name string
		v    float32
	}{{"TopP", p.TopP}, {"MinP", p.MinP}, {"TypicalP", p.TypicalP}, {"XTCProbability", p.XTCProbability}, {"XTCThreshold", p.XTCThreshold}}
	for _, f := range unit {
		if f.v < 0 || f.v > 1 {
			return n, perr(f.name, "%v is outside [0, 1]", f.v)
		}
	}
	switch {
	case p.TopK < 0 || p.TopK > MaxTopK:
		return n, perr("TopK", "%d is outside [0, %d]", p.TopK, MaxTopK)
	case p.RepeatLastN < -1 || p.RepeatLastN > MaxHistory:
		return n, perr("RepeatLastN", "%d is outside [-1, %d]", p.RepeatLastN, MaxHistory)
	case p.DRYLastN < -1 || p.DRYLastN > MaxHistory:
		return n, perr("DRYLastN", "%d is outside [-1, %d]", p.DRYLastN, MaxHistory)
	case p.DRYAllowedLength < 0 || p.DRYAllowedLength > MaxHistory:
		return n, perr("DRYAllowedLength", "%d is outside [0, %d]", p.DRYAllowedLength, MaxHistory)
	case p.DRYBase != 0 && p.DRYBase < 1:
		return n, perr("DRYBase", "%v is below 1 (0 means llama.cpp's 1.75)", p.DRYBase)
	case p.MinKeep < 0 || p.MinKeep > MaxTopK:
		return n, perr("MinKeep", "%d is outside [0, %d]", p.MinKeep, MaxTopK)
	case p.Mirostat < 0 || p.Mirostat > 2:
		return n, perr("Mirostat", "%d is not 0, 1 or 2", p.Mirostat)
	}
	for i, b := range p.LogitBias {
		if b.Token < 0 {
			return n, perr(fmt.Sprintf("LogitBias[%d].Token", i), "%d is negative", b.Token)
		}
		if math.IsNaN(float64(b.Bias)) || math.IsInf(float64(b.Bias), 1) {
			return n, perr(fmt.Sprintf("LogitBias[%d].Bias", i), "%v is not a number or -Inf", b.Bias)
		}
	}
	for i, seq := range p.DRYSequenceBreakers {
		if len(seq) == 0 {
			return n, perr(fmt.Sprintf("DRYSequenceBreakers[%d]", i), "is empty")
		}
		if len(seq) > dryMaxTailTokens+1 {
			return n, perr(fmt.Sprintf("DRYSequenceBreakers[%d]", i), "has %d tokens (at most %d)", len(seq), dryMaxTailTokens+1)
		}
		for j, t := range seq {
			if t < 0 {
				return n, perr(fmt.Sprintf("DRYSequenceBreakers[%d][%d]", i, j), "%d is negative", t)
			}
		}
	}

	// Neutral values.
	if n.DynaTempExponent == 0 {
		n.DynaTempExponent = 1
	}
	if n.TopP == 0 {
		n.TopP = 1
	}
	if n.TypicalP == 0 {
		n.TypicalP = 1
	}
	if n.RepeatPenalty == 0 {
		n.RepeatPenalty = 1
	}
	switch n.RepeatLastN {
	case 0:
		n.RepeatLastN = 64
	case -1:
		n.RepeatLastN = MaxHistory
	}
	if n.DRYBase == 0 {
		n.DRYBase = 1.75
	}
	if n.DRYAllowedLength == 0 {
		n.DRYAllowedLength = 2
	}
	if n.DRYLastN == 0 {
		n.DRYLastN = -1
	}
	if n.XTCThreshold == 0 {
		n.XTCThreshold = 0.1
	}
	if n.MirostatTau == 0 {
		n.MirostatTau = 5
	}
	if n.MirostatEta == 0 {
		n.MirostatEta = 0.1
	}

	switch p.Preset {
	case "", PresetLlamaCpp:
	case PresetAkunu:
		return n, checkAkunu(p)
	default:
		return n, perr("Preset", "unknown preset %q (known: %q, %q)", p.Preset, PresetLlamaCpp, PresetAkunu)
	}

	if p.Mirostat != 0 {
		if p.Samplers != nil {
			return n, perr("Samplers", "cannot be combined with Mirostat %d (mirostat replaces the whole order, as in llama.cpp)", p.Mirostat)
		}
		return n, nil
	}

	names := p.Samplers
	if names == nil {
		names = DefaultOrder
	}
	seen := map[string]bool{}
	for i, name := range names {
		c, ok := samplerNames[name]
		if !ok {
			hint := ""
			if name == "infill" {
				hint = " (infill needs a vocabulary; it is not supported)"
			}
			return n, perr(fmt.Sprintf("Samplers[%d]", i), "unknown sampler %q%s; known: %s", name, hint, strings.Join(DefaultOrder, ", "))
		}
		n.order = append(n.order, c)
		seen[c] = true
	}
	on := map[string]bool{
		"penalties":   n.RepeatPenalty != 1 || n.FrequencyPenalty != 0 || n.PresencePenalty != 0,
		"dry":         n.DRYMultiplier != 0,
		"top_n_sigma": n.TopNSigma > 0,
		"top_k":       n.TopK > 0,
		"typ_p":       n.TypicalP < 1,
		"top_p":       n.TopP < 1,
		"min_p":       n.MinP > 0,
		"xtc":         n.XTCProbability > 0 && n.XTCThreshold <= 0.5,
		"temperature": true,
	}
	for _, name := range DefaultOrder {
		if on[name] && !seen[name] {
			if name == "temperature" && n.Temperature == 1 && n.DynaTempRange == 0 {
				continue // temperature 1 is the identity
			}
			return n, perr("Samplers", "%s is set but %q is not in the order %q", fieldOf(name), name, names)
		}
	}
	return n, nil
}

func fieldOf(sampler string) string {
	switch sampler {
	case "penalties":
		return "a penalty"
	case "dry":
		return "DRYMultiplier"
	case "top_n_sigma":
		return "TopNSigma"
	case "top_k":
		return "TopK"
	case "typ_p":
		return "TypicalP"
	case "top_p":
		return "TopP"
	case "min_p":
		return "MinP"
	case "xtc":
		return "XTCProbability"
	}
	return "Temperature"
}

// checkAkunu rejects settings the akunu pipeline does not have.
func checkAkunu(p Params) error {
	unsupported := []struct {
		name string
		set  bool
	}{
		{"DynaTempRange", p.DynaTempRange != 0}, {"TypicalP", p.TypicalP != 0}, {"TopNSigma", p.TopNSigma != 0},
		{"FrequencyPenalty", p.FrequencyPenalty != 0}, {"PresencePenalty", p.PresencePenalty != 0},
		{"DRYMultiplier", p.DRYMultiplier != 0}, {"XTCProbability", p.XTCProbability != 0},
		{"Mirostat", p.Mirostat != 0}, {"MinKeep", p.MinKeep != 0}, {"Samplers", p.Samplers != nil},
	}
	for _, u := range unsupported {
		if u.set {
			return perr(u.name, "is not part of the %q preset (penalty → temperature → softmax → top-k → min-p → top-p)", PresetAkunu)
		}
	}
	return nil
}
