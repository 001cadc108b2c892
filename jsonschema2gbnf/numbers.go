package jsonschema2gbnf

import (
	"fmt"
	"math/big"
	"strings"
)

// Numbers. Integer bounds become exact digit-range grammars of any size
// (no cap on the number of digits); decimal bounds become exact grammars
// over plain decimal notation (integer part and fraction digit by digit);
// a bound of exactly 0 keeps the exponent form (the sign decides).
// multipleOf on integers is a remainder automaton over the digits.

// MaxBoundDigits bounds the decimal digits of a numeric bound or
// multipleOf the converter writes out (a bound like 1e100000 would
// otherwise become a 100,000-digit grammar). 400 digits covers every
// IEEE double written in full.
const MaxBoundDigits = 400

// MaxMultipleOf bounds an integer multipleOf the converter turns into a
// remainder automaton: one rule per remainder, ten alternatives each.
const MaxMultipleOf = 1000

// The numbers the grammar writes stay within what the validator can read
// (ValidatorMaxExponent): the exponent has at most MaxExponentDigits
// digits and the fraction at most MaxFractionDigits, so the exponent less
// the fraction digits is within ±(99,999 + 2,402). The integer part has
// no bound (it does not move the exponent). A number of the schema
// beyond the validator's range is a *NumberRangeError (see load.go).
const (
	// MaxExponentDigits bounds the digits of an exponent: |e| ≤ 99,999.
	// A float64 needs three (1e-324 … 1.8e308).
	MaxExponentDigits = 5

	// fracTail is the longest run of free fraction digits (and of zeros)
	// in one place of a number grammar: the shared rules fdigits and
	// fzeros, counted repetitions that the mask keeps counters for. 1000
	// stays below llama.cpp's limit on counted repetitions (2000), and
	// above the longest fraction a float64 needs written out in full
	// (1074 digits only for subnormals: 767 significant).
	fracTail = 1000

	// MaxFractionDigits bounds the fraction digits of every number the
	// grammar writes (a fraction of up to fracTail digits is always
	// accepted): a digit-by-digit prefix of at most MaxBoundDigits for a
	// decimal bound, then at most two free runs and the digit between
	// them.
	MaxFractionDigits = 2*fracTail + MaxBoundDigits + 2
)

// Grammars of the shared numeric rules.
const (
	bodyUint    = `"0" | [1-9] [0-9]*`
	bodyNzUint  = `[1-9] [0-9]*`
	bodyNumber  = `"-"? uint frac? exp?`
	bodyInteger = `"-"? uint`
)

var (
	bodyExp     = fmt.Sprintf(`[eE] [-+]? [0-9]{1,%d}`, MaxExponentDigits)
	bodyFDigits = fmt.Sprintf(`[0-9]{0,%d}`, fracTail)
	// fracRun is a non-empty free run of fraction digits as one counted
	// repetition: the strings of [0-9] fdigits, which gave the mask a
	// state before fdigits' call whose walk stepped every digit run of
	// the vocabulary into the call (3,561–3,681 work units on first use
	// on Llama-3); one repetition is called at once, and its entry comes
	// from the digits' slice, shared by the grammar's numbers.
	fracRun    = fmt.Sprintf(`[0-9]{1,%d}`, fracTail+1)
	bodyFrac   = `"." ` + fracRun
	bodyFZeros = fmt.Sprintf(`"0"{0,%d}`, fracTail)
)

func digitClass(a, b byte) string {
	if a == b {
		return `"` + string(a) + `"`
	}
	if b == a+1 {
		return "[" + string(a) + string(b) + "]"
	}
	return "[" + string(a) + "-" + string(b) + "]"
}

func allByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			return false
		}
	}
	return true
}

func anyDigits(n int) string {
	if n == 0 {
		return ""
	}
	return rep("[0-9]", n, n)
}

// geqSame: strings of len(s) digits that are ≥ s (leading zeros allowed).
func geqSame(s string) string {
	if s == "" || allByte(s, '0') {
		return anyDigits(len(s))
	}
	var alts []string
	alts = append(alts, seq(`"`+s[:1]+`"`, geqSame(s[1:])))
	if s[0] < '9' {
		alts = append(alts, seq(digitClass(s[0]+1, '9'), anyDigits(len(s)-1)))
	}
	return alt(alts...)
}

// leqSame: strings of len(s) digits that are ≤ s.
func leqSame(s string) string {
	if s == "" || allByte(s, '9') {
		return anyDigits(len(s))
	}
	var alts []string
	if s[0] > '0' {
		alts = append(alts, seq(digitClass('0', s[0]-1), anyDigits(len(s)-1)))
	}
	alts = append(alts, seq(`"`+s[:1]+`"`, leqSame(s[1:])))
	return alt(alts...)
}

// sameLen: digit strings of the common length of lo ≤ hi, between them.
func sameLen(lo, hi string) string {
	if lo == hi {
		if lo == "" {
			return `""`
		}
		return `"` + lo + `"`
	}
	i := 0
	for lo[i] == hi[i] {
		i++
	}
	prefix := ""
	if i > 0 {
		prefix = `"` + lo[:i] + `"`
	}
	r := len(lo) - i - 1
	loRest, hiRest := lo[i+1:], hi[i+1:]
	a, b := lo[i], hi[i]
	midLo, midHi := a+1, b-1
	var alts []string
	if allByte(loRest, '0') {
		midLo = a
	} else {
		alts = append(alts, seq(`"`+string(a)+`"`, geqSame(loRest)))
	}
	if allByte(hiRest, '9') {
		midHi = b
	}
	if midLo <= midHi {
		alts = append(alts, seq(digitClass(midLo, midHi), anyDigits(r)))
	}
	if !allByte(hiRest, '9') {
		alts = append(alts, seq(`"`+string(b)+`"`, leqSame(hiRest)))
	}
	return seq(prefix, alt(alts...))
}

// natRange: canonical decimal naturals (no leading zeros) in [a, b];
// b nil means unbounded. Returns "" when empty.
func natRange(a, b *big.Int) string {
	if a.Sign() < 0 {
		a = new(big.Int)
	}
	if b != nil && a.Cmp(b) > 0 {
		return ""
	}
	A := a.String()
	var alts []string
	top := len(A)
	if b != nil {
		top = len(b.String())
	}
	for L := len(A); L <= top; L++ {
		lo := A
		if L > len(A) {
			lo = "1" + strings.Repeat("0", L-1)
		}
		hi := strings.Repeat("9", L)
		if b != nil && L == top {
			hi = b.String()
		}
		if L == 1 || lo[0] != '0' {
			alts = append(alts, sameLen(lo, hi))
		}
	}
	if b == nil {
		alts = append(alts, seq("[1-9]", rep("[0-9]", len(A), -1)))
	}
	return alt(alts...)
}

// intRangeExpr: canonical integers in [lo, hi] (nil = unbounded), "" when
// empty. "-0" is not produced (0 is written "0").
func intRangeExpr(lo, hi *big.Int) string {
	if lo == nil && hi == nil {
		return ruleInteger
	}
	if lo != nil && hi != nil && lo.Cmp(hi) > 0 {
		return ""
	}
	var alts []string
	// "-0" is 0 too
	if (lo == nil || lo.Sign() <= 0) && (hi == nil || hi.Sign() >= 0) {
		alts = append(alts, `"-0"`)
	}
	// negatives first (the shorter alternative to read)
	if lo == nil || lo.Sign() < 0 {
		mLo := big.NewInt(1)
		if hi != nil && hi.Sign() < 0 {
			mLo = new(big.Int).Neg(hi)
		}
		var mHi *big.Int
		if lo != nil {
			mHi = new(big.Int).Neg(lo)
		}
		if x := natRange(mLo, mHi); x != "" {
			alts = append(alts, seq(`"-"`, paren(x)))
		}
	}
	if hi == nil || hi.Sign() >= 0 {
		nLo := new(big.Int)
		if lo != nil && lo.Sign() > 0 {
			nLo = lo
		}
		var x string
		switch {
		case hi == nil && nLo.Sign() == 0:
			x = ruleUint
		case hi == nil && nLo.Cmp(big.NewInt(1)) == 0:
			x = ruleNzUint
		default:
			x = natRange(nLo, hi)
		}
		if x != "" {
			alts = append(alts, x)
		}
	}
	return alt(alts...)
}

// decimalDigits splits a non-negative rational that is a finite decimal
// into its integer part and fraction digits (no trailing zeros). ok is
// false for a non-terminating decimal or one over MaxBoundDigits.
func decimalDigits(r *big.Rat) (ip *big.Int, frac string, ok bool) {
	num := new(big.Int).Abs(r.Num())
	den := r.Denom()
	ip, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if len(ip.String()) > MaxBoundDigits {
		return nil, "", false
	}
	var b strings.Builder
	ten := big.NewInt(10)
	for rem.Sign() != 0 {
		if b.Len() >= MaxBoundDigits {
			return nil, "", false
		}
		rem.Mul(rem, ten)
		d, m := new(big.Int).QuoRem(rem, den, new(big.Int))
		b.WriteByte(byte('0' + d.Int64()))
		rem = m
	}
	return ip, b.String(), true
}

// MaxDecimalPlaces bounds d in a multipleOf of 10^-d written into
// fraction grammars (the grammar grows with d²).
const MaxDecimalPlaces = 30

// freeDigits: digit strings (non-empty when nonEmpty) whose digits after
// the first sig are zeros; sig < 0 means no limit.
// The runs are bounded by fracTail (MaxFractionDigits).
func freeDigits(sig int, nonEmpty bool) string {
	switch {
	case sig < 0 && nonEmpty:
		return fracRun
	case sig < 0:
		return ruleFDigits
	case sig == 0 && nonEmpty:
		return fracZeros
	case sig == 0:
		return ruleFZeros
	case nonEmpty:
		return seq(rep("[0-9]", 1, sig), ruleFZeros)
	}
	return seq(rep("[0-9]", 0, sig), ruleFZeros)
}

// fracZeros is one or more zeros in a fraction ("0"+, bounded).
const fracZeros = `"0" ` + ruleFZeros

// nonzeroDigits: digit strings with a non-zero digit among the first sig
// (sig < 0: anywhere), zeros after them.
func nonzeroDigits(sig int) string {
	if sig < 0 {
		return ruleFZeros + " [1-9] " + ruleFDigits
	}
	if sig == 0 {
		return ""
	}
	inner := nonzeroDigits(sig - 1)
	if inner == "" {
		return seq("[1-9]", freeDigits(sig-1, false))
	}
	return alt(seq("[1-9]", freeDigits(sig-1, false)), seq(`"0"`, inner))
}

func decSig(sig int) int {
	if sig > 0 {
		return sig - 1
	}
	return sig
}

// fracG describes the fraction digit strings D (the digits after the
// point; empty D means "no fraction") with, when tl, D ≥ L (D > L when
// exL) and, when th, D ≤ H (D < H when exH), compared as decimal
// fractions, and (sig ≥ 0) only zeros after the first sig digits. It
// returns whether empty D qualifies and the expression for the non-empty
// ones ("" when none).
func fracG(L, H string, tl, th, exL, exH bool, sig int) (bool, string) {
	if tl && allByte(L, '0') && !exL {
		tl = false
	}
	if sig == 0 {
		ok := (!tl || (allByte(L, '0') && !exL)) && (!th || !(exH && allByte(H, '0')))
		if ok {
			return true, fracZeros
		}
		return false, ""
	}
	if th && allByte(H, '0') {
		if exH || tl {
			return false, ""
		}
		return true, fracZeros
	}
	if !tl && !th {
		return true, freeDigits(sig, true)
	}
	if tl && allByte(L, '0') && exL && !th {
		return false, nonzeroDigits(sig)
	}
	emptyOK := !tl
	first := func(s string) byte {
		if s == "" {
			return '0'
		}
		return s[0]
	}
	rest := func(s string) string {
		if s == "" {
			return ""
		}
		return s[1:]
	}
	lo, hi := byte('0'), byte('9')
	if tl {
		lo = first(L)
	}
	if th {
		hi = first(H)
	}
	var alts []string
	withTail := func(d string, e bool, ne string) {
		switch {
		case e && ne != "":
			alts = append(alts, seq(d, opt(ne)))
		case e:
			alts = append(alts, d)
		case ne != "":
			alts = append(alts, seq(d, ne))
		}
	}
	if tl && th && lo == hi {
		e, ne := fracG(rest(L), rest(H), true, true, exL, exH, decSig(sig))
		withTail(`"`+string(lo)+`"`, e, ne)
		return emptyOK, alt(alts...)
	}
	mLo, mHi := lo, hi
	if tl {
		e, ne := fracG(rest(L), "", true, false, exL, false, decSig(sig))
		withTail(`"`+string(lo)+`"`, e, ne)
		mLo = lo + 1
	}
	if th {
		mHi = hi - 1
	}
	if mLo <= mHi {
		alts = append(alts, seq(digitClass(mLo, mHi), freeDigits(decSig(sig), false)))
	}
	if th {
		e, ne := fracG("", rest(H), false, true, false, exH, decSig(sig))
		withTail(`"`+string(hi)+`"`, e, ne)
	}
	return emptyOK, alt(alts...)
}

// fracPart wraps fracG's result with the decimal point.
func fracPart(emptyOK bool, ne string) (string, bool) {
	switch {
	case ne == "" && emptyOK:
		return `""`, true
	case ne == "":
		return "", false
	case emptyOK:
		return opt(seq(`"."`, ne)), true
	}
	return seq(`"."`, ne), true
}

// numShape restricts the numbers a range grammar writes: nonInt keeps only
// non-integers; sig ≥ 0 allows only zeros after sig fraction digits
// (multipleOf 10^-sig).
type numShape struct {
	nonInt bool
	sig    int
}

// anyFrac is the fraction of a number whose integer part is free.
func (sh numShape) anyFrac() string {
	if sh.nonInt {
		return seq(`"."`, nonzeroDigits(sh.sig))
	}
	if sh.sig < 0 {
		return ruleFrac + "?"
	}
	return opt(seq(`"."`, freeDigits(sh.sig, true)))
}

// magRange: plain decimals I(.F)? (I canonical, no exponent) with value
// in [a, b] (b nil: unbounded; aEx/bEx exclusive), a ≥ 0.
func magRange(a, b *big.Rat, aEx, bEx bool, sh numShape) (string, error) {
	ai, af, ok := decimalDigits(a)
	if !ok {
		return "", errBound
	}
	// a non-integer above an integer bound: the fraction must be > 0
	loEx := aEx || (sh.nonInt && af == "")
	one := big.NewInt(1)
	var alts []string
	if b == nil {
		if f, ok := fracPart(fracG(af, "", true, false, loEx, false, sh.sig)); ok {
			alts = append(alts, seq(`"`+ai.String()+`"`, f))
		}
		alts = append(alts, seq(paren(natRange(new(big.Int).Add(ai, one), nil)), sh.anyFrac()))
		return alt(alts...), nil
	}
	bi, bf, ok := decimalDigits(b)
	if !ok {
		return "", errBound
	}
	if ai.Cmp(bi) == 0 {
		if f, ok := fracPart(fracG(af, bf, true, true, loEx, bEx, sh.sig)); ok {
			alts = append(alts, seq(`"`+ai.String()+`"`, f))
		}
		return alt(alts...), nil
	}
	if f, ok := fracPart(fracG(af, "", true, false, loEx, false, sh.sig)); ok {
		alts = append(alts, seq(`"`+ai.String()+`"`, f))
	}
	if mid := natRange(new(big.Int).Add(ai, one), new(big.Int).Sub(bi, one)); mid != "" {
		alts = append(alts, seq(paren(mid), sh.anyFrac()))
	}
	if f, ok := fracPart(fracG("", bf, sh.nonInt, true, sh.nonInt, bEx, sh.sig)); ok {
		alts = append(alts, seq(`"`+bi.String()+`"`, f))
	}
	return alt(alts...), nil
}

var errBound = fmt.Errorf("bound has more than %d digits or is not a finite decimal", MaxBoundDigits)

// numRangeExpr: JSON numbers with value in the given bounds (nil =
// unbounded) and the given shape. A single bound of 0 on plain numbers
// keeps exponents; other bounded grammars use plain decimal notation (no
// exponent). "" when empty.
func numRangeExpr(lo, hi *big.Rat, loEx, hiEx bool, sh numShape) (string, error) {
	plain := !sh.nonInt && sh.sig < 0
	if lo == nil && hi == nil {
		if plain {
			return ruleNumber, nil
		}
		return seq(`"-"?`, ruleUint, sh.anyFrac()), nil
	}
	if lo != nil && hi != nil {
		if c := lo.Cmp(hi); c > 0 || (c == 0 && (loEx || hiEx)) {
			return "", nil
		}
	}
	nonzeroMant := `(` + ruleNzUint + ` frac? | "0" "." ` + nonzeroDigits(-1) + `)`
	zeroMant := `"0" ("." ` + fracZeros + `)?`
	if plain && hi == nil && lo.Sign() == 0 {
		if loEx {
			return seq(nonzeroMant, ruleExp+"?"), nil
		}
		return alt(seq(ruleUint, ruleFrac+"?", ruleExp+"?"), seq(`"-"`, zeroMant, ruleExp+"?")), nil
	}
	if plain && lo == nil && hi.Sign() == 0 {
		neg := seq(`"-"`, nonzeroMant, ruleExp+"?")
		if hiEx {
			return neg, nil
		}
		return alt(neg, seq(`"-"?`, zeroMant, ruleExp+"?")), nil
	}
	var alts []string
	// "-0", "-0.0"… are 0 (not a non-integer, and with at most 0 significant fraction digits)
	if (lo == nil || lo.Sign() < 0 || (lo.Sign() == 0 && !loEx)) && (hi == nil || hi.Sign() > 0 || (hi.Sign() == 0 && !hiEx)) && !sh.nonInt {
		alts = append(alts, `"-0" ("." `+fracZeros+`)?`)
	}
	// negative part: v in [lo, min(hi,0)), written "-" m with m = -v > 0
	if lo == nil || lo.Sign() < 0 {
		mLo, mLoEx := new(big.Rat), true
		if hi != nil && hi.Sign() < 0 {
			mLo, mLoEx = new(big.Rat).Neg(hi), hiEx
		}
		var mHi *big.Rat
		if lo != nil {
			mHi = new(big.Rat).Neg(lo)
		}
		x, err := magRange(mLo, mHi, mLoEx, loEx, sh)
		if err != nil {
			return "", err
		}
		if x != "" {
			alts = append(alts, seq(`"-"`, paren(x)))
		}
	}
	// non-negative part: v in [max(lo,0), hi]
	if hi == nil || hi.Sign() > 0 || (hi.Sign() == 0 && !hiEx) {
		nLo, nLoEx := new(big.Rat), false
		if lo != nil && lo.Sign() >= 0 {
			nLo, nLoEx = lo, loEx
		}
		x, err := magRange(nLo, hi, nLoEx, hiEx, sh)
		if err != nil {
			return "", err
		}
		if x != "" {
			alts = append(alts, x)
		}
	}
	return alt(alts...), nil
}

// intBounds converts number bounds to inclusive integer bounds.
func intBounds(lo, hi *big.Rat, loEx, hiEx bool) (*big.Int, *big.Int) {
	var l, h *big.Int
	if lo != nil {
		// smallest integer > lo (ex) or ≥ lo
		q, m := new(big.Int).DivMod(lo.Num(), lo.Denom(), new(big.Int)) // floor
		if m.Sign() != 0 || loEx {
			q.Add(q, big.NewInt(1))
		}
		l = q
	}
	if hi != nil {
		q, m := new(big.Int).DivMod(hi.Num(), hi.Denom(), new(big.Int))
		if m.Sign() == 0 && hiEx {
			q.Sub(q, big.NewInt(1))
		}
		h = q
	}
	return l, h
}

// modAccept writes a remainder automaton for the positive canonical
// integers whose remainder modulo L is accepting, and returns its start
// rule. State r means "the digits so far are ≡ r (mod L)".
func (c *conv) modAccept(L int, accept []bool) string {
	var kb strings.Builder
	fmt.Fprintf(&kb, "%d:", L)
	for _, a := range accept {
		if a {
			kb.WriteByte('1')
		} else {
			kb.WriteByte('0')
		}
	}
	if n, ok := c.modRules[kb.String()]; ok {
		return n
	}
	base := fmt.Sprintf("mod-%d", L)
	start := c.rules.fresh(base)
	c.modRules[kb.String()] = start
	names := make([]string, L)
	for r := 0; r < L; r++ {
		names[r] = c.rules.fresh(fmt.Sprintf("%s-r%d", base, r))
	}
	trans := func(r, from int) string {
		byT := map[int][]byte{}
		var order []int
		for d := from; d < 10; d++ {
			t := (r*10 + d) % L
			if _, ok := byT[t]; !ok {
				order = append(order, t)
			}
			byT[t] = append(byT[t], byte('0'+d))
		}
		var alts []string
		for _, t := range order {
			alts = append(alts, seq(digitSet(byT[t]), names[t]))
		}
		return strings.Join(alts, " | ")
	}
	for r := 0; r < L; r++ {
		body := trans(r, 0)
		if accept[r] {
			body += ` | ""`
		}
		c.rules.define(names[r], body)
	}
	c.rules.define(start, trans(0, 1))
	return start
}

func digitSet(ds []byte) string {
	if len(ds) == 1 {
		return `"` + string(ds) + `"`
	}
	var rs []rune
	for _, d := range ds {
		rs = append(rs, rune(d), rune(d))
	}
	return class(normRunes(rs), false)
}
