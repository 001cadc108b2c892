package jsonschema2gbnf

import "github.com/santhosh-tekuri/jsonschema/v5"

// Formats are written as Go regular expressions over the decoded string
// and translated like patterns. Each one accepts only strings that
// santhosh-tekuri's validator for that format accepts (the soundness
// tests check this by sampling); where the validator's exact language is
// not regular or is impractical (length limits spread over labels,
// leap seconds at other UTC offsets, IPvFuture, non-ASCII e-mail), the
// grammar takes a large, common subset. Formats the validator does not
// know are annotations (the validator ignores them, so does the grammar),
// except the two of the JSON Schema specification it does not assert,
// idnFormats, which are never silently dropped.

const (
	reDec   = `(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])`
	reIPv4  = reDec + `\.` + reDec + `\.` + reDec + `\.` + reDec
	reH16   = `[0-9a-fA-F]{1,4}`
	reLS32  = `(?:` + reH16 + `:` + reH16 + `|` + reIPv4 + `)`
	reIPv6  = `(?:(?:` + reH16 + `:){6}` + reLS32 + `|::(?:` + reH16 + `:){5}` + reLS32 + `|(?:` + reH16 + `)?::(?:` + reH16 + `:){4}` + reLS32 + `|(?:(?:` + reH16 + `:){0,1}` + reH16 + `)?::(?:` + reH16 + `:){3}` + reLS32 + `|(?:(?:` + reH16 + `:){0,2}` + reH16 + `)?::(?:` + reH16 + `:){2}` + reLS32 + `|(?:(?:` + reH16 + `:){0,3}` + reH16 + `)?::` + reH16 + `:` + reLS32 + `|(?:(?:` + reH16 + `:){0,4}` + reH16 + `)?::` + reLS32 + `|(?:(?:` + reH16 + `:){0,5}` + reH16 + `)?::` + reH16 + `|(?:(?:` + reH16 + `:){0,6}` + reH16 + `)?::)`
	reLeap  = `(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)` // 0000 excluded: see reYear
	reDate  = `(?:` + reYear + `-` + reMonthDD + `|` + reLeap + `-02-29)`
	reTime  = `(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])|23:59:60(?:\.[0-9]+)?(?:[Zz]|[+-]00:00))`
	reDT    = reDate + `[Tt]` + reTime
	reDurT  = `(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)`
	reDurD  = `(?:[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)`
	reDur   = `P(?:[0-9]+W|` + reDurD + `(?:T` + reDurT + `)?|T` + reDurT + `)`
	reL63   = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?`
	reL62   = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,60}[a-zA-Z0-9])?`
	reL30   = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,28}[a-zA-Z0-9])?`
	reL14   = `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,12}[a-zA-Z0-9])?`
	reHost  = `(?:` + reL63 + `(?:\.` + reL63 + `){0,2}|` + reL62 + `(?:\.` + reL62 + `){3}|` + reL14 + `(?:\.` + reL14 + `){4,15})\.?`
	reAtext = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]"
	// E-mail: the validator allows at most 254 bytes in all, 64 in the
	// local part and 253 in the domain. The grammar writes a local part of
	// at most 64 bytes (32 + 2×16) and a domain of at most 185 (6 labels of
	// at most 30): 250 in all. Each part has one shape: alternatives of
	// different label bounds (as in reHost) would multiply the states that
	// allow most of a vocabulary, and the compile time with them.
	reLocal  = reAtext + `{1,32}(?:\.` + reAtext + `{1,15}){0,2}`
	reDomain = reL30 + `(?:\.` + reL30 + `){0,5}`
	reEmail  = reLocal + `@` + reDomain
	reUUID   = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

	reUnres   = `[a-zA-Z0-9._~-]`
	reSub     = `[!$&'()*+,;=]`
	rePct     = `%[0-9a-fA-F]{2}`
	rePchar   = `(?:` + reUnres + `|` + rePct + `|` + reSub + `|[:@])`
	reSeg     = rePchar + `*`
	reSegNZ   = rePchar + `+`
	reSegNC   = `(?:` + reUnres + `|` + rePct + `|` + reSub + `|@)+`
	reUser    = `(?:` + reUnres + `|` + rePct + `|` + reSub + `|:)*`
	reRegName = `(?:` + reUnres + `|` + reSub + `)*`
	reHostU   = `(?:\[` + reIPv6 + `\]|` + reRegName + `)`
	reAuth    = `(?:` + reUser + `@)?` + reHostU + `(?::[0-9]*)?`
	rePathAE  = `(?:/` + reSeg + `)*`
	rePathAbs = `/(?:` + reSegNZ + `(?:/` + reSeg + `)*)?`
	rePathRL  = reSegNZ + `(?:/` + reSeg + `)*`
	rePathNS  = reSegNC + `(?:/` + reSeg + `)*`
	reQuery   = `(?:\?(?:` + rePchar + `|[/?])*)?`
	reFrag    = `(?:#(?:` + rePchar + `|[/?])*)?`
	reScheme  = `[a-zA-Z][a-zA-Z0-9+.-]*`
	reURI     = reScheme + `:(?://` + reAuth + rePathAE + `|` + rePathAbs + `|` + rePathRL + `|)` + reQuery + reFrag
	reRelRef  = `(?://` + reAuth + rePathAE + `|` + rePathAbs + `|` + rePathNS + `|)` + reQuery + reFrag
	reJSONPtr = `(?:/(?:[^~/]|~[01])*)*`
)

// idnFormats are the formats the JSON Schema specification defines that
// the validator does not assert, with why they have no grammar. A schema
// that names one expects it enforced, so they are asserted formats here:
// an error in strict mode (a warning and a plain string with Lenient),
// where a format the specification does not define is an annotation.
var idnFormats = map[string]string{
	"idn-email":    "format idn-email (RFC 6531) has no grammar: its domain is an internationalized host name, whose A-labels (punycode) are not a regular language; use format email for ASCII addresses",
	"idn-hostname": "format idn-hostname (IDNA2008, RFC 5890-5893) has no grammar: its A-labels (punycode), contextual and bidi rules are not a regular language; use format hostname for ASCII names",
}

// assertedFormat reports whether a format constrains strings (for the
// validator, or as one of idnFormats); other formats are annotations.
func assertedFormat(name string) bool {
	return jsonschema.Formats[name] != nil || idnFormats[name] != ""
}

// noGrammar is the reason an asserted format has no grammar.
func noGrammar(format string) string {
	if r := idnFormats[format]; r != "" {
		return r
	}
	return "format " + format + " has no grammar"
}

// Dates: RFC 3339 allows the year 0000, but it does not interoperate:
// Python's datetime (and so its JSON Schema validators), .NET's DateTime
// and many databases start at year 1, and a time.Time of year 0 does not
// survive every round trip. The grammar neither generates nor accepts
// year 0000 (dates, date-times and periods); the validator's exact
// language, with it, is kept for negations (validatorRegex), so that
// `not: {format: date}` stays exact.
const (
	reYear    = `(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)` // 0001..9999
	reMonthDD = `(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))`
	reDateRFC = `(?:[0-9]{4}-` + reMonthDD + `|(?:` + reLeap + `|0000)-02-29)`
)

// validatorRegex returns the anchored regular expression whose language
// is exactly what the validator accepts for a format, for the formats
// that have one: their complement (not: {format: …}) is exact too.
func validatorRegex(name string) (string, bool) {
	switch name {
	case "date":
		return `^` + reDateRFC + `$`, true
	case "uuid", "ipv4", "ip-address", "duration", "json-pointer", "relative-json-pointer":
		return formatRegex(name)
	}
	return "", false
}

// formatRegex returns the anchored regular expression for a format the
// validator asserts; ok is false for one without a grammar.
func formatRegex(name string) (string, bool) {
	var re string
	switch name {
	case "date-time":
		re = reDT
	case "date":
		re = reDate
	case "time":
		re = reTime
	case "duration":
		re = reDur
	case "period":
		re = `(?:` + reDT + `/(?:` + reDT + `|` + reDur + `)|` + reDur + `/` + reDT + `)`
	case "hostname":
		re = reHost
	case "email":
		re = reEmail
	case "ipv4", "ip-address":
		re = reIPv4
	case "ipv6":
		re = reIPv6
	case "uuid":
		re = reUUID
	case "uri", "iri":
		re = reURI
	case "uri-reference", "uriref", "iri-reference":
		re = `(?:` + reURI + `|` + reRelRef + `)`
	case "json-pointer":
		re = reJSONPtr
	case "relative-json-pointer":
		re = `(?:0|[1-9][0-9]*)(?:#|` + reJSONPtr + `)`
	default:
		return "", false
	}
	return `^` + re + `$`, true
}
