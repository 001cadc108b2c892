package jsonschema2gbnf

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/internal/earley"
)

// acceptCases: each schema with documents the grammar must accept and
// documents it must reject (whole-string matches). Every case is also
// checked for soundness by sampling.
var acceptCases = []struct {
	name   string
	schema string
	opts   []Option
	accept []string
	reject []string
}{
	{"empty schema: any value", `{}`,
		nil,
		[]string{`1`, `"a"`, `null`, `true`, `[]`, `{"a":[1,{"b":null}]}`, `-0.5e3`},
		[]string{`tru`, `{a:1}`, `01`, `"\x01"`}},
	{"true schema", `true`, nil, []string{`[1,2]`}, []string{``}},
	{"type null", `{"type":"null"}`, nil, []string{`null`}, []string{`0`, `"null"`}},
	{"type array of types", `{"type":["string","null"]}`, nil, []string{`"x"`, `null`}, []string{`1`}},
	{"integer", `{"type":"integer"}`, nil,
		[]string{`0`, `-7`, `123456789012345678901234567890`},
		[]string{`1.5`, `01`, `1e3`, `+1`}},
	{"integer minimum 0", `{"type":"integer","minimum":0}`, nil,
		[]string{`0`, `-0`, `7`, `1000000000000000000000`}, []string{`-1`, `-00`}},
	{"integer range across zero", `{"type":"integer","minimum":-123,"maximum":42}`, nil,
		[]string{`-123`, `-100`, `-9`, `0`, `9`, `42`}, []string{`-124`, `43`, `100`, `-1000`}},
	{"integer exclusive bounds", `{"type":"integer","exclusiveMinimum":5,"exclusiveMaximum":300}`, nil,
		[]string{`6`, `10`, `99`, `299`}, []string{`5`, `300`, `1000`}},
	{"integer huge bounds", `{"type":"integer","minimum":-99999999999999999999,"maximum":123456789012345678901}`, nil,
		[]string{`-99999999999999999999`, `123456789012345678900`, `0`},
		[]string{`123456789012345678902`, `-100000000000000000000`}},
	{"integer negative range", `{"type":"integer","maximum":-5}`, nil,
		[]string{`-5`, `-6`, `-100`}, []string{`-4`, `0`, `5`}},
	{"draft-04 exclusive boolean", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","minimum":1,"exclusiveMinimum":true,"maximum":3}`, nil,
		[]string{`2`, `3`}, []string{`1`, `4`}},
	{"number minimum 0 keeps exponents", `{"type":"number","minimum":0}`, nil,
		[]string{`0`, `0.5`, `12e5`, `3.25E-2`}, []string{`-1`, `-0.5`}},
	{"number exclusive minimum 0", `{"type":"number","exclusiveMinimum":0}`, nil,
		[]string{`0.001`, `1e-9`, `5`}, []string{`0`, `0.000`, `-1`}},
	{"number decimal range", `{"type":"number","minimum":-1.5,"maximum":2.25}`, nil,
		[]string{`-1.5`, `-1.49`, `-1`, `0`, `2`, `2.25`, `2.2499`, `1.999`, `2.250`},
		[]string{`-1.51`, `2.26`, `2.2501`, `3`, `-2`}},
	{"number exclusive decimal", `{"type":"number","exclusiveMinimum":0.1,"exclusiveMaximum":0.3}`, nil,
		[]string{`0.2`, `0.10001`, `0.29999`}, []string{`0.1`, `0.3`, `0.100`, `0.30`, `0`}},
	{"integer multipleOf", `{"type":"integer","multipleOf":7}`, nil,
		[]string{`0`, `7`, `-14`, `700000000000000007`}, []string{`1`, `8`, `-15`}},
	{"integer multipleOf with small range", `{"type":"integer","multipleOf":5,"minimum":3,"maximum":27}`, nil,
		[]string{`5`, `10`, `25`}, []string{`0`, `3`, `30`}},
	{"multipleOf 0.01 with bounds", `{"type":"number","multipleOf":0.01,"minimum":0,"maximum":100}`, nil,
		[]string{`0`, `0.5`, `99.99`, `100`, `12.340`}, []string{`0.001`, `100.01`, `-1`}},
	{"oneOf integer/number: integers match both", `{"oneOf":[{"type":"integer"},{"type":"number"}]}`, nil,
		[]string{`2.5`, `-0.25`}, []string{`1`, `0`}},
	{"string lengths", `{"type":"string","minLength":2,"maxLength":3}`, nil,
		[]string{`"ab"`, `"abc"`, `"\n\u00e9"`, `"é\"x"`}, []string{`"a"`, `"abcd"`, `""`}},
	{"string length counts characters", `{"type":"string","maxLength":1}`, nil,
		[]string{`"😀"`, `"\u00e9"`, `""`, `"\ud83d\ude00"`, `"\uD83D\uDE00"`}, []string{`"ab"`, `"\ud83d\ude00x"`, `"\ud83d"`, `"\ude00"`, `"\ude00\ud83d"`}},
	{"unconstrained strings accept escaped surrogate pairs", `{"type":"string"}`, nil,
		[]string{`"\ud83d\ude00"`, `"a\uDBFF\uDFFFb"`}, []string{`"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\udc00\ud800"`}},
	{"-0 among enumerated integer multiples", `{"type":"integer","multipleOf":3,"minimum":-10,"maximum":30}`, nil,
		[]string{`-0`, `0`, `-9`, `30`}, []string{`-10`, `1`, `33`, `-00`}},
	{"-0 among multiples of a number", `{"type":"number","multipleOf":5,"minimum":-1,"maximum":7}`, nil,
		[]string{`-0`, `-0.0`, `0`, `5.00`}, []string{`1`, `10`}},
	{"contains with minContains 0", `{"contains":{"type":"integer"},"minContains":0}`, nil,
		[]string{`[]`, `["a"]`, `[1,"a"]`}, []string{`[`}},
	{"contains with minContains 0 and prefixItems", `{"prefixItems":[{"type":"string"}],"contains":{"type":"integer"},"minContains":0,"maxItems":2}`, nil,
		[]string{`[]`, `["a"]`, `["a",1]`}, []string{`[1]`, `["a",1,2]`}},
	{"pattern unanchored", `{"type":"string","pattern":"ab+c"}`, nil,
		[]string{`"abc"`, `"xxabbbcyy"`}, []string{`"ac"`, `"abx"`}},
	{"pattern anchored", `{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"}`, nil,
		[]string{`"ABC-1234"`}, []string{`"ABC-123"`, `"xABC-1234"`, `"abc-1234"`}},
	{"pattern with escapes", `{"type":"string","pattern":"^\\[\\]\\{\\}\\(\\)\\|\\+\\*\\?\"\\\\$"}`, nil,
		[]string{`"[]{}()|+*?\"\\"`}, []string{`"[]"`}},
	{"pattern top-level alternation", `{"type":"string","pattern":"^A|B|C|D$"}`, nil,
		[]string{`"Axx"`, `"xBx"`, `"D"`, `"xxD"`}, []string{`"xA"`, `"Dx"`}},
	{"pattern with inner anchor needs the automaton", `{"type":"string","pattern":"(^a|b$)"}`, nil,
		[]string{`"ab"`, `"xb"`, `"a"`}, []string{`"ba"`, `"xa"`}},
	{"pattern word boundary", `{"type":"string","pattern":"\\bcat\\b"}`, nil,
		[]string{`"cat"`, `"a cat!"`}, []string{`"cats"`, `"concat"`}},
	{"pattern case-insensitive", `{"type":"string","pattern":"^(?i)abc$"}`, nil,
		[]string{`"aBc"`, `"ABC"`}, []string{`"abd"`}},
	{"pattern and length", `{"type":"string","pattern":"^[a-z]+$","maxLength":5,"minLength":2}`, nil,
		[]string{`"ab"`, `"abcde"`}, []string{`"a"`, `"abcdef"`, `"aB"`}},
	{"class chain from a not-pattern and maxLength", `{"type":"string","not":{"pattern":"[^a-c]"},"maxLength":6}`, nil,
		[]string{`""`, `"abc"`, `"aaaaaa"`}, []string{`"aaaaaaa"`, `"d"`, `"abcd"`}},
	{"class chain from a not-pattern and both lengths", `{"type":"string","not":{"pattern":"[^a-c]"},"minLength":6,"maxLength":8}`, nil,
		[]string{`"aaaaaa"`, `"abcabcab"`}, []string{`"aaaaa"`, `"aaaaaaaaa"`, `"aaaaaad"`}},
	{"class chain with a tail after it", `{"type":"string","pattern":"^[a-c]{0,6}x?$","not":{"pattern":"^a{7}"},"maxLength":7}`, nil,
		[]string{`""`, `"abc"`, `"aaaaaax"`, `"x"`, `"ccccccx"`}, []string{`"aaaaaaa"`, `"abcabcab"`, `"xx"`}},
	{"accepting class chain into a tail", `{"type":"string","pattern":"^(a{0,5}|a{6}b+)$","not":{"pattern":"c"}}`, nil,
		[]string{`""`, `"aaaaa"`, `"aaaaaab"`, `"aaaaaabbb"`}, []string{`"aaaaaa"`, `"aaaaab"`, `"aaaaaaab"`, `"b"`}},
	{"unanchored alternatives share their open ends", `{"type":"string","pattern":"ab|cd"}`, nil,
		[]string{`"ab"`, `"xcdx"`, `"abcd"`, `"xxab"`}, []string{`""`, `"ac"`, `"a-b"`}},
	{"alternatives anchored at one end only", `{"type":"string","pattern":"^ab|cd"}`, nil,
		[]string{`"ab"`, `"abx"`, `"xcd"`, `"cdx"`}, []string{`"xab"`, `"ac"`}},
	{"pattern implies the minimum length", `{"type":"string","pattern":"^(?:\\S+\\s+){0,3}\\S+$","minLength":1}`, nil,
		[]string{`"a"`, `"a b c d"`, `"ab\tcd"`}, []string{`""`, `"a b c d e"`, `" a"`, `"a "`}},
	{"pattern implies the maximum length", `{"type":"string","pattern":"^(ab|c){1,2}$","maxLength":4,"minLength":1}`, nil,
		[]string{`"abab"`, `"c"`, `"abc"`}, []string{`""`, `"ababc"`, `"cab c"`}},
	{"pattern shorter than minLength still checked", `{"type":"string","pattern":"^(a|bb)+$","minLength":3}`, nil,
		[]string{`"abb"`, `"aaa"`, `"bbbb"`}, []string{`"a"`, `"bb"`, `"ab"`}},
	{"pattern alternatives imply the lengths", `{"type":"string","pattern":"^$|^x{2,3}$","maxLength":3}`, nil,
		[]string{`""`, `"xx"`, `"xxx"`}, []string{`"x"`, `"xxxx"`}},
	{"unanchored pattern with maxLength still checked", `{"type":"string","pattern":"(?:\\S+\\s+){0,2}\\S+","maxLength":3}`, nil,
		[]string{`"abc"`, `"a b"`}, []string{`"abcd"`, `"a b c"`}},
	{"pattern unanchored end and length", `{"type":"string","pattern":"^ab","maxLength":4}`, nil,
		[]string{`"ab"`, `"abxy"`}, []string{`"abxyz"`, `"xab"`}},
	{"two patterns intersect", `{"allOf":[{"type":"string","pattern":"^[a-z0-9]+$"},{"pattern":"[0-9]"}]}`, nil,
		[]string{`"a1"`, `"9"`}, []string{`"ab"`, `"A1"`}},
	{"format date", `{"type":"string","format":"date"}`, nil,
		[]string{`"2024-02-29"`, `"2023-12-31"`, `"2000-02-29"`, `"0001-01-01"`, `"0400-02-29"`, `"0004-02-29"`, `"9999-12-31"`},
		[]string{`"2023-02-29"`, `"1900-02-29"`, `"2023-04-31"`, `"2023-1-01"`, `"0000-01-01"`, `"0000-02-29"`}},
	{"format date-time", `{"type":"string","format":"date-time"}`, nil,
		[]string{`"2025-03-14T09:26:53.589Z"`, `"2025-03-14t09:26:53+05:30"`, `"0001-01-01T00:00:00Z"`},
		[]string{`"2025-03-14 09:26:53Z"`, `"2025-03-14T25:00:00Z"`, `"0000-12-31T23:59:59Z"`}},
	// The negation stays the validator's: year 0000 is a date to it.
	{"not format date", `{"type":"string","not":{"format":"date"}}`, nil,
		[]string{`"x"`, `"2023-02-29"`}, []string{`"2024-01-01"`, `"0000-01-01"`, `"0000-02-29"`}},
	{"format time", `{"type":"string","format":"time"}`, nil, []string{`"23:59:60Z"`, `"12:00:00-08:00"`}, []string{`"12:00:00"`}},
	{"format duration", `{"type":"string","format":"duration"}`, nil,
		[]string{`"P1Y2M3DT4H5M6S"`, `"PT1H"`, `"P3W"`, `"P1D"`}, []string{`"P"`, `"PT"`, `"P1YD"`, `"1Y"`}},
	{"format email", `{"type":"string","format":"email"}`, nil,
		[]string{`"dana.mueller@example.org"`, `"a+b@c.io"`}, []string{`"a@"`, `"@b.c"`, `"a b@c.d"`}},
	{"format hostname", `{"type":"string","format":"hostname"}`, nil,
		[]string{`"example.com"`, `"a-b.c.d.e.f"`, `"localhost."`}, []string{`"-a.com"`, `"a..b"`, `"a_b.com"`}},
	{"format ipv4", `{"type":"string","format":"ipv4"}`, nil,
		[]string{`"192.168.0.1"`, `"0.0.0.0"`}, []string{`"256.1.1.1"`, `"01.1.1.1"`, `"1.1.1"`}},
	{"format ipv6", `{"type":"string","format":"ipv6"}`, nil,
		[]string{`"::1"`, `"2001:db8::8a2e:370:7334"`, `"::ffff:192.168.0.1"`}, []string{`"1::2::3"`, `"12345::"`}},
	{"format uuid", `{"type":"string","format":"uuid"}`, nil,
		[]string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`}},
	{"format uri", `{"type":"string","format":"uri"}`, nil,
		[]string{`"https://example.com/a/b?c=d#e"`, `"mailto:a@b.c"`, `"http://[::1]:8080/"`}, []string{`"/relative"`, `"http://exa mple.com"`}},
	{"format uri-reference", `{"type":"string","format":"uri-reference"}`, nil,
		[]string{`"/relative/path?x=1"`, `"https://a.b"`, `""`}, []string{`"a b"`}},
	{"unknown format is an annotation", `{"type":"string","format":"grid"}`, nil, []string{`"anything"`}, nil},
	{"idn format on a non-string is no constraint", `{"type":"integer","format":"idn-email"}`, nil, []string{`7`}, []string{`"a@b.c"`}},
	{"enum of any values", `{"enum":["red","amber",null,42,["foo"],{"a":1,"b":[true]}]}`, nil,
		[]string{`"red"`, `null`, `42`, `["foo"]`, `{"a":1,"b":[true]}`}, []string{`"green"`, `43`, `{"b":[true],"a":1}`}},
	{"const with escapes", `{"const":" \r \n \" \\ é\u0001"}`, nil,
		[]string{`" \r \n \" \\ é\u0001"`}, []string{`" \r \n \" \\ \u00e9\u0001"`}},
	{"enum filtered by type", `{"type":"string","enum":["a",1,"b"]}`, nil, []string{`"a"`, `"b"`}, []string{`1`}},
	{"allOf enums intersect", `{"allOf":[{"enum":["a","b","c"]},{"enum":["b","c","d"]}]}`, nil,
		[]string{`"b"`, `"c"`}, []string{`"a"`, `"d"`}},
	// Enums of minEnumSelf values or more are judged without their own
	// enum keyword (emitEnum): the rest of the schema still filters them,
	// on the schema itself, through a $ref chain, and alongside a sibling
	// schema of the term.
	{"long enum filtered by its schema", `{"type":"string","maxLength":2,"enum":["a","bb","ccc",1,"d","ee","fff",null,"g","hh"]}`, nil,
		[]string{`"a"`, `"bb"`, `"d"`, `"ee"`, `"g"`, `"hh"`}, []string{`"ccc"`, `1`, `"fff"`, `null`, `"x"`}},
	{"long enum through a $ref chain", `{"$defs":{"a":{"$ref":"#/$defs/b","minLength":2},"b":{"type":"string","enum":["a","bb","ccc",1,"d","ee","fff",null,"g","hh"]}},"$ref":"#/$defs/a"}`, nil,
		[]string{`"bb"`, `"ccc"`, `"ee"`, `"fff"`, `"hh"`}, []string{`"a"`, `1`, `"d"`, `null`, `"g"`, `"x"`}},
	{"long enums intersect", `{"allOf":[{"enum":["a","b","c","d","e","f","g","h","i"]},{"enum":["h","i","j","k","l","m","n","o","a"]}]}`, nil,
		[]string{`"a"`, `"h"`, `"i"`}, []string{`"b"`, `"j"`, `"o"`}},
	{"properties in schema order", `{"type":"object","properties":{"b":{"type":"string"},"c":{"type":"string"},"a":{"type":"string"}},"required":["a","b","c"],"additionalProperties":false}`, nil,
		[]string{`{"b":"1","c":"2","a":"3"}`}, []string{`{"a":"3","b":"1","c":"2"}`, `{"b":"1","c":"2"}`}},
	{"optional properties", `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"},"d":{"type":"integer"}},"required":["c"],"additionalProperties":false}`, nil,
		[]string{`{"c":1}`, `{"a":1,"c":2}`, `{"b":1,"c":2,"d":3}`, `{"a":1,"b":2,"c":3,"d":4}`},
		[]string{`{}`, `{"a":1}`, `{"c":1,"b":2}`, `{"a":1,,"c":2}`, `{,"c":1}`}},
	{"required after optionals, then more", `{"properties":{"d":{"type":"string"},"t":{"type":"string"},"u":{"type":"string"},"v":{}},"required":["t","u"]}`, nil,
		[]string{`{"t":"a","u":"b"}`, `{"d":"x","t":"a","u":"b","v":1}`, `{"t":"a","u":"b","zz":1}`}, []string{`{"t":"a"}`, `{"d":"x","t":"a"}`}},
	{"all optional, many", `{"properties":{"a":{},"b":{},"c":{},"d":{},"e":{}},"additionalProperties":false}`, nil,
		[]string{`{}`, `{"e":1}`, `{"b":1,"d":2}`, `{"a":1,"b":2,"c":3,"d":4,"e":5}`}, []string{`{"e":1,"a":2}`, `{"x":1}`}},
	{"additional properties allowed by default", `{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`, nil,
		[]string{`{"a":1}`, `{"a":1,"x":"y"}`, `{"a":1,"x":{},"y":[1]}`}, []string{`{"a":1,"a":2}`, `{"x":1}`}},
	{"additional properties schema", `{"type":"object","properties":{"and":{"type":"number"},"also":{"type":"number"}},"required":["and"],"additionalProperties":{"type":"string"}}`, nil,
		[]string{`{"and":1}`, `{"and":1,"also":2}`, `{"and":1,"x":"s"}`, `{"and":1,"alsox":"s"}`},
		[]string{`{"and":1,"x":2}`, `{"and":1,"also":"s"}`}},
	{"forbid additional option", `{"type":"object","properties":{"a":{"type":"number"}}}`, []Option{ForbidAdditionalProperties()},
		[]string{`{}`, `{"a":1}`}, []string{`{"a":1,"b":2}`}},
	{"empty property name", `{"properties":{"":{"type":"integer"},"a":{"type":"integer"}},"additionalProperties":{"type":"integer"}}`, nil,
		[]string{`{"":1,"a":2}`, `{"b":3}`}, []string{`{"":"x"}`}},
	{"pattern properties", `{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`, nil,
		[]string{`{}`, `{"x-a":1,"x-b":2}`}, []string{`{"y":1}`, `{"x-a":"s"}`}},
	{"pattern properties and additional", `{"type":"object","properties":{"id":{"type":"integer"}},"patternProperties":{"^s_":{"type":"string"}},"additionalProperties":{"type":"boolean"}}`, nil,
		[]string{`{"id":1,"s_a":"x","b":true}`}, []string{`{"s_a":true}`, `{"b":"x"}`}},
	{"propertyNames pattern", `{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`, nil,
		[]string{`{"abc":1}`}, []string{`{"ABC":1}`, `{"a1":1}`}},
	{"min/maxProperties", `{"type":"object","properties":{"a":{},"b":{},"c":{}},"additionalProperties":false,"minProperties":1,"maxProperties":2}`, nil,
		[]string{`{"a":1}`, `{"a":1,"c":2}`}, []string{`{}`, `{"a":1,"b":2,"c":3}`}},
	{"maxProperties with free keys", `{"type":"object","maxProperties":2}`, nil,
		[]string{`{}`, `{"x":1,"y":2}`}, []string{`{"x":1,"y":2,"z":3}`}},
	{"array items and bounds", `{"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":3}`, nil,
		[]string{`[true,false]`, `[true,true,true]`}, []string{`[true]`, `[true,true,true,true]`, `[1,2]`}},
	{"maxItems 0", `{"items":{"type":"boolean"},"maxItems":0}`, nil, []string{`[]`, `1`}, []string{`[true]`}},
	{"prefixItems", `{"prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`, nil,
		[]string{`[]`, `["a"]`, `["a",1]`}, []string{`[1]`, `["a",1,2]`}},
	{"draft-07 tuple items", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],"additionalItems":{"type":"integer"},"minItems":2}`, nil,
		[]string{`["a",1]`, `["a",1,2]`}, []string{`["a"]`, `["a","b"]`}},
	{"contains", `{"type":"array","items":{"type":"integer"},"contains":{"minimum":10}}`, nil,
		[]string{`[10]`, `[1,2,30]`, `[50,1]`}, []string{`[]`, `[1,2]`}},
	{"uniqueItems with maxItems 1", `{"type":"array","uniqueItems":true,"maxItems":1}`, nil, []string{`[]`, `[1]`}, []string{`[1,2]`}},
	{"anyOf", `{"anyOf":[{"type":"string"},{"type":"integer","minimum":5}]}`, nil,
		[]string{`"x"`, `5`}, []string{`4`, `null`}},
	{"oneOf with disjoint types", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, nil, []string{`"x"`, `1`}, []string{`null`}},
	{"oneOf of overlapping enums: a value in two branches matches none", `{"oneOf":[{"enum":["a","b","c"]},{"enum":["b","d"]},{"type":"integer","enum":[1,2,"a"]}]}`, nil,
		[]string{`"a"`, `"c"`, `"d"`, `1`, `2`}, []string{`"b"`, `3`, `"1"`}},
	{"oneOf of an enum through $ref and null", `{"properties":{"tz":{"$ref":"#/$defs/ntz"}},"required":["tz"],"$defs":{"tz":{"type":"string","enum":["UTC","CET","EST","PST","MSK","JST","IST","GMT"]},"ntz":{"oneOf":[{"$ref":"#/$defs/tz"},{"type":"null"}]}}}`, nil,
		[]string{`{"tz":"UTC"}`, `{"tz":"GMT"}`, `{"tz":null}`}, []string{`{"tz":"XYZ"}`, `{"tz":1}`}},
	{"oneOf of enums with a sibling enum", `{"enum":["a","b","c","d"],"oneOf":[{"enum":["a","b"]},{"enum":["b","c"]}]}`, nil,
		[]string{`"a"`, `"c"`}, []string{`"b"`, `"d"`}},
	{"oneOf with overlap is made exact", `{"oneOf":[{"properties":{"dog":{"type":"string"}},"required":["dog"]},{"properties":{"cat":{"type":"string"}},"required":["cat"]}]}`, nil,
		[]string{`{"dog":"a"}`, `{"cat":"b"}`, `{"dog":"a","x":1}`}, []string{`{"dog":"a","cat":"b"}`, `{}`}},
	{"oneOf discriminator", `{"oneOf":[{"properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"]},{"properties":{"kind":{"const":"b"},"y":{"type":"string"}},"required":["kind"]}]}`, nil,
		[]string{`{"kind":"a","x":1}`, `{"kind":"b","y":"s"}`}, []string{`{"kind":"c"}`, `{"kind":"a","x":"s"}`}},
	{"oneOf arrays overlap on the empty array", `{"oneOf":[{"type":"string"},{"type":"array","items":{"type":"number"}},{"type":"array","items":{"type":"string"}}]}`, nil,
		[]string{`"s"`, `[1,2]`, `["a"]`}, []string{`[]`, `[1,"a"]`}},
	{"oneOf: a negation residual of another type", `{"oneOf":[{"type":"string","maxLength":3},{"prefixItems":[{"type":"integer"}]}]}`, nil,
		[]string{`"abcd"`, `[1]`, `5`, `null`}, []string{`"ab"`, `["x"]`}},
	{"not multipleOf on integers", `{"type":"integer","not":{"multipleOf":3}}`, nil,
		[]string{`1`, `-2`, `10`}, []string{`0`, `3`, `-9`, `12`}},
	{"multipleOf and not multipleOf", `{"type":"integer","multipleOf":2,"not":{"anyOf":[{"multipleOf":3},{"multipleOf":5}]},"minimum":1}`, nil,
		[]string{`2`, `4`, `14`, `98`}, []string{`6`, `10`, `30`, `0`, `-2`}},
	{"not multipleOf on numbers keeps non-integers", `{"type":"number","not":{"multipleOf":2}}`, nil,
		[]string{`1`, `2.5`, `-0.1`}, []string{`2`, `0`, `-4`}},
	{"not minItems", `{"type":"array","not":{"minItems":2}}`, nil, []string{`[]`, `[1]`}, []string{`[1,2]`}},
	{"not items", `{"type":"array","not":{"items":{"type":"integer"}}}`, nil, []string{`["a"]`, `[1,"a",2]`}, []string{`[]`, `[1,2]`}},
	{"allOf merges objects", `{"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`, nil,
		[]string{`{"a":1,"b":"x"}`}, []string{`{"a":1}`, `{"b":"x","a":1}`}},
	{"$ref and definitions", `{"$ref":"#/definitions/foo","definitions":{"foo":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}}}`, nil,
		[]string{`{"a":"x"}`}, []string{`{}`}},
	{"recursive $ref", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node"}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`, nil,
		[]string{`{"v":1}`, `{"v":1,"next":{"v":2,"next":{"v":3}}}`}, []string{`{"v":1,"next":{}}`}},
	{"$anchor", `{"$defs":{"x":{"$anchor":"pos","type":"integer","minimum":1}},"properties":{"n":{"$ref":"#pos"}}}`, nil,
		[]string{`{"n":1}`}, []string{`{"n":0}`}},
	{"not type", `{"not":{"type":"string"}}`, nil, []string{`1`, `null`, `[]`}, []string{`"s"`}},
	{"not enum on strings", `{"type":"string","not":{"enum":["a","b"]}}`, nil, []string{`"c"`, `"ab"`, `""`}, []string{`"a"`, `"b"`}},
	{"not required", `{"type":"object","not":{"required":["a"]}}`, nil, []string{`{}`, `{"b":1}`}, []string{`{"a":1}`}},
	{"not pattern", `{"type":"string","not":{"pattern":"^x"}}`, nil, []string{`"ax"`, `""`}, []string{`"xa"`}},
	{"if then else", `{"type":"object","properties":{"kind":{"type":"string"},"n":{}},"required":["kind","n"],"if":{"properties":{"kind":{"const":"int"}}},"then":{"properties":{"n":{"type":"integer"}}},"else":{"properties":{"n":{"type":"string"}}}}`, nil,
		[]string{`{"kind":"int","n":1}`, `{"kind":"str","n":"x"}`}, []string{`{"kind":"int","n":"x"}`, `{"kind":"str","n":1}`}},
	{"dependentRequired", `{"type":"object","properties":{"a":{},"b":{}},"dependentRequired":{"a":["b"]},"additionalProperties":false}`, nil,
		[]string{`{}`, `{"b":1}`, `{"a":1,"b":2}`}, []string{`{"a":1}`}},
	{"unevaluatedProperties false over allOf", `{"allOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{"type":"string"}}}],"unevaluatedProperties":false}`, nil,
		[]string{`{}`, `{"a":1,"b":"x"}`}, []string{`{"c":1}`, `{"a":1,"c":1}`}},
	{"unevaluatedProperties schema", `{"properties":{"a":{}},"patternProperties":{"^x":{}},"unevaluatedProperties":{"type":"integer"}}`, nil,
		[]string{`{"a":"s","xy":"s","z":1}`}, []string{`{"z":"s"}`}},
	{"unevaluatedItems false", `{"prefixItems":[{"type":"string"}],"unevaluatedItems":false}`, nil,
		[]string{`[]`, `["a"]`}, []string{`["a","b"]`}},
	{"OpenAPI nullable", `{"properties":{"a":{"type":"string","nullable":true},"b":{"enum":["x"],"nullable":true}},"required":["a","b"]}`, nil,
		[]string{`{"a":null,"b":null}`, `{"a":"s","b":"x"}`}, []string{`{"a":1,"b":"x"}`}},
	{"nullable via type array", `{"type":["integer","null"],"minimum":3}`, nil, []string{`null`, `3`}, []string{`2`}},
	// an integer multipleOf admits only integers (6000.0 is one too): with
	// the integers excluded, no number is left (schemafuzz seed 401484)
	{"integer multipleOf, not integer", `{"multipleOf":1,"not":{"type":"integer"}}`, nil, []string{`null`, `"a"`, `{}`}, []string{`1`, `1.0`, `1.5`, `0`}},
	{"oneOf an integer multipleOf and integer", `{"oneOf":[{"multipleOf":1},{"type":"integer"}]}`, nil, []string{`null`, `"a"`}, []string{`100`, `100.0`, `1.5`}},
	{"integer multipleOf, not integer, some other type", `{"type":["number","string"],"multipleOf":3,"not":{"type":"integer"}}`, nil, []string{`"a"`}, []string{`3`, `3.0`, `1`}},
}

func TestConvertAcceptReject(t *testing.T) {
	for _, tc := range acceptCases {
		t.Run(tc.name, func(t *testing.T) {
			src, g := compileGrammar(t, tc.schema, tc.opts...)
			r := earley.New(g)
			for _, s := range tc.accept {
				if !r.Accepts([]byte(s)) {
					t.Errorf("grammar rejects %s\n%s", s, src)
				}
			}
			for _, s := range tc.reject {
				if r.Accepts([]byte(s)) {
					t.Errorf("grammar accepts %s\n%s", s, src)
				}
			}
			checkSound(t, tc.schema, g, 40, 1, 300)
		})
	}
}

// Unsupported keywords are errors naming the keyword and its pointer,
// sorted; lenient mode turns them into warnings.
func TestUnsupported(t *testing.T) {
	cases := []struct {
		schema string
		want   string
	}{
		{`{"type":"array","uniqueItems":true}`, `#/uniqueItems: unsupported keyword "uniqueItems"`},
		{`{"properties":{"age":{"type":"array","not":{"uniqueItems":true}}}}`, `#/properties/age/not: unsupported keyword "not"`},
		{`{"type":"number","multipleOf":0.3}`, `#/multipleOf: unsupported keyword "multipleOf"`},
		{`{"properties":{"b":{"type":"array","uniqueItems":true},"a":{"type":"array","uniqueItems":true}}}`,
			`#/properties/a/uniqueItems: unsupported keyword "uniqueItems": the grammar cannot compare items; #/properties/b/uniqueItems`},
		// Formats of the specification the validator does not assert are
		// not silently plain strings (unknown ones are annotations).
		{`{"type":"string","format":"idn-email"}`, `#/format: unsupported keyword "format": format idn-email (RFC 6531) has no grammar`},
		{`{"properties":{"h":{"format":"idn-hostname"}}}`, `#/properties/h/format: unsupported keyword "format": format idn-hostname (IDNA2008`},
		{`{"propertyNames":{"format":"idn-hostname"}}`, `#/propertyNames/format: unsupported keyword "format"`},
		{`{"propertyNames":{"format":"uri-template"}}`, `#/propertyNames/format: unsupported keyword "format": format uri-template has no grammar`},
	}
	for _, tc := range cases {
		_, err := Convert([]byte(tc.schema))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Convert(%s) = %v, want error containing %q", tc.schema, err, tc.want)
			continue
		}
		var ue *UnsupportedError
		if !errorsAs(err, &ue) {
			t.Errorf("Convert(%s): error %T is not an *UnsupportedError", tc.schema, err)
		}
		var w []Warning
		g, err := Convert([]byte(tc.schema), Lenient(&w))
		if err != nil || g == "" || len(w) == 0 {
			t.Errorf("lenient Convert(%s) = %v, warnings %v", tc.schema, err, w)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	cases := []struct {
		schema string
		check  func(error) bool
		want   string
	}{
		{`{"type":"kaboom"}`, func(e error) bool { var x *InvalidSchemaError; return errorsAs(e, &x) }, "invalid schema"},
		{`{"type":123}`, func(e error) bool { var x *InvalidSchemaError; return errorsAs(e, &x) }, "invalid schema"},
		{`{"type":`, func(e error) bool { var x *InvalidSchemaError; return errorsAs(e, &x) }, "1:9"},
		{`[1]`, func(e error) bool { var x *InvalidSchemaError; return errorsAs(e, &x) }, "must be a JSON object"},
		{`{"$ref":"https://example.com/s.json"}`, func(e error) bool { var x *RemoteRefError; return errorsAs(e, &x) }, "https://example.com/s.json"},
		{`{"properties":{"a":{"$ref":"other.json#/x"}}}`, func(e error) bool { var x *RemoteRefError; return errorsAs(e, &x) }, "other.json"},
		{`false`, func(e error) bool { var x *UnsatisfiableError; return errorsAs(e, &x) }, "unsatisfiable"},
		{`{"type":"integer","minimum":2,"maximum":1}`, func(e error) bool { var x *UnsatisfiableError; return errorsAs(e, &x) }, "unsatisfiable"},
		{`{"enum":[` + strings.Repeat(`1,`, MaxEnumValues) + `1]}`, func(e error) bool { var x *LimitError; return errorsAs(e, &x) }, "MaxEnumValues"},
		{strings.Repeat(`{"items":`, MaxNestingDepth+1) + `{}` + strings.Repeat(`}`, MaxNestingDepth+1), func(e error) bool { var x *LimitError; return errorsAs(e, &x) }, "MaxNestingDepth"},
	}
	for _, tc := range cases {
		_, err := Convert([]byte(tc.schema))
		if err == nil || !tc.check(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Convert(%s) = %v (%T), want %q", clipS(tc.schema), err, err, tc.want)
		}
	}
}

func TestOptions(t *testing.T) {
	if _, err := Convert([]byte(`{}`), FlexibleWhitespace(-1)); err == nil {
		t.Error("FlexibleWhitespace(-1) accepted")
	}
	if _, err := Convert([]byte(`{}`), FlexibleWhitespace(MaxIndentLimit+1)); err == nil {
		t.Error("FlexibleWhitespace over the limit accepted")
	}
	// any order
	schema := `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},"required":["a","c"],"additionalProperties":false}`
	_, g := compileGrammar(t, schema, AnyPropertyOrder())
	r := earley.New(g)
	for _, s := range []string{`{"a":1,"c":2}`, `{"c":2,"a":1}`, `{"b":1,"c":2,"a":3}`} {
		if !r.Accepts([]byte(s)) {
			t.Errorf("any order rejects %s", s)
		}
	}
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2,"c":3}`, `{"c":1,"a":2,"c":3}`} {
		if r.Accepts([]byte(s)) {
			t.Errorf("any order accepts %s", s)
		}
	}
	checkSound(t, schema, g, 50, 2, 200)
	// flexible whitespace
	_, g = compileGrammar(t, schema, FlexibleWhitespace(4))
	r = earley.New(g)
	for _, s := range []string{"{\n  \"a\": 1,\n  \"c\": 2\n}", `{"a":1,"c":2}`, `{ "a": 1, "c": 2 }`} {
		if !r.Accepts([]byte(s)) {
			t.Errorf("flexible rejects %q", s)
		}
	}
	for _, s := range []string{"{\n      \"a\": 1,\"c\":2}", "{\n\n\"a\":1,\"c\":2}", "{\"a\" :1,\"c\":2}", " {\"a\":1,\"c\":2}"} {
		if r.Accepts([]byte(s)) {
			t.Errorf("flexible accepts %q", s)
		}
	}
}

// The two bench documents, exactly as they are (pretty-printed, 2-space
// indentation), are accepted in flexible mode.
func TestBenchDocumentsFlexible(t *testing.T) {
	for _, id := range []string{"02-order-schema", "04-wide-schema"} {
		schema := readShared(t, "bench", "cases", id, "schema.json")
		doc := readShared(t, "bench", "cases", id, "doc.json")
		_, g := compileGrammar(t, string(schema), FlexibleWhitespace(0))
		if !earley.New(g).Accepts(doc) {
			t.Errorf("%s: flexible grammar rejects doc.json", id)
		}
		// compact: the compact form of the same document
		_, gc := compileGrammar(t, string(schema))
		compact, err := Format(schema, doc)
		if err != nil {
			t.Fatal(err)
		}
		if !earley.New(gc).Accepts(compact) {
			t.Errorf("%s: compact grammar rejects the formatted doc %s", id, compact)
		}
		pretty, err := Format(schema, doc, FlexibleWhitespace(0))
		if err != nil {
			t.Fatal(err)
		}
		if !earley.New(g).Accepts(pretty) {
			t.Errorf("%s: flexible grammar rejects Format's output:\n%s", id, pretty)
		}
		checkSound(t, string(schema), g, 30, 3, 2000)
	}
}

func TestFormatOrdersKeys(t *testing.T) {
	schema := `{"properties":{"b":{"type":"object","properties":{"y":{},"x":{}}},"a":{}}}`
	got, err := Format([]byte(schema), []byte(`{"z":1,"a":"\u00e9\/","b":{"x":1,"q":2,"y":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"b":{"y":3,"x":1,"q":2},"a":"é/","z":1}`
	if string(got) != want {
		t.Errorf("Format = %s, want %s", got, want)
	}
}

var _ = fmt.Sprint

// TestKeyExclusion checks the language of keys outside a set of declared
// names (notInSet) through additionalProperties: {"k":2} must be accepted
// exactly when k is not declared, {"k":1} exactly when it is. The sets mix
// prefixes of each other, the empty key, non-ASCII and escaped characters
// at the start, inside and at the end of names.
func TestKeyExclusion(t *testing.T) {
	sets := [][]string{
		{"a"},
		{"", "ab"},
		{"a", "ab", "abc", "b"},
		{"id", "items", "item", "name", "notice"},
		{"é", "éa", "x\u00e9", "naïve", "日本"},
		{"q\"", "\\", "a\nb", "\u0001", "\t"},
		{"\u007f", "~", " ", "z"},
	}
	probes := []string{"", "a", "b", "ab", "abc", "abcd", "ac", "ba", "i", "id", "ide", "it", "item", "items", "itemsx", "n", "name", "names", "nam", "notice", "notic",
		"é", "éa", "éb", "e", "x", "xé", "xe", "naïve", "naive", "naï", "日", "日本", "日本語", "本",
		"q", "q\"", "q\"x", "\\", "\\\\", "a\nb", "a\n", "\u0001", "\u0002", "\t", "\t\t", "\u007f", "~", " ", "  ", "z", "zz", "\u00ff", "😀", "a😀"}
	for _, set := range sets {
		props := map[string]any{}
		for _, k := range set {
			props[k] = map[string]any{"const": 1}
		}
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "additionalProperties": map[string]any{"const": 2}})
		src, g := compileGrammar(t, string(schema))
		r := earley.New(g)
		for _, k := range append(probes, set...) {
			kj, _ := json.Marshal(k)
			declared := slices.Contains(set, k)
			for v, want := range map[int]bool{1: declared, 2: !declared} {
				doc := fmt.Sprintf("{%s:%d}", kj, v)
				if got := r.Accepts([]byte(doc)); got != want {
					t.Errorf("set %q: accepts %s = %v, want %v\n%s", set, doc, got, want, src)
				}
			}
		}
		checkSound(t, string(schema), g, 40, 3, 200)
	}
}

// TestOptionalBeforeRequired checks objects whose first required property
// follows optional ones, against every ordered subset of the properties
// with and without a free key: accepted exactly when the required ones
// are present (schema order is the grammar's policy).
func TestOptionalBeforeRequired(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		required []string
		extra    bool // additionalProperties: {"const": 2}
	}{
		{[]string{"c"}, false},
		{[]string{"c"}, true},
		{[]string{"b", "e"}, false},
		{[]string{"e"}, true},
		{[]string{"d", "e"}, false},
	} {
		props := map[string]any{}
		for _, k := range names {
			props[k] = map[string]any{"const": 1}
		}
		sch := map[string]any{"type": "object", "properties": props, "required": tc.required, "additionalProperties": false}
		if tc.extra {
			sch["additionalProperties"] = map[string]any{"const": 2}
		}
		schema, _ := json.Marshal(sch)
		src, g := compileGrammar(t, string(schema))
		r := earley.New(g)
		for mask := 0; mask < 1<<len(names); mask++ {
			var kvs []string
			ok := true
			for i, k := range names {
				if mask&(1<<i) != 0 {
					kvs = append(kvs, fmt.Sprintf("%q:1", k))
				} else if slices.Contains(tc.required, k) {
					ok = false
				}
			}
			for _, free := range []bool{false, true} {
				doc := kvs
				want := ok
				if free {
					doc = append(slices.Clone(kvs), `"z":2`)
					want = ok && tc.extra
				}
				s := "{" + strings.Join(doc, ",") + "}"
				if got := r.Accepts([]byte(s)); got != want {
					t.Errorf("required %q extra %v: accepts %s = %v, want %v\n%s", tc.required, tc.extra, s, got, want, src)
				}
			}
		}
	}
}

// Patterns that are valid ECMA-262 but not RE2 name the feature Go lacks
// (not "not valid 'regex'"); patterns invalid in both quote Go's parse
// error. Neither can be relaxed: the validator cannot compile them.
func TestPatternFeatures(t *testing.T) {
	for _, tc := range []struct {
		schema, want string
		unsupported  bool
	}{
		{`{"type":"string","pattern":"^(?=a)b"}`, `#/pattern: unsupported keyword "pattern": unsupported pattern feature (lookahead) in "^(?=a)b"`, true},
		{`{"properties":{"s":{"pattern":"^(?!x).*$"}}}`, `#/properties/s/pattern: unsupported keyword "pattern": unsupported pattern feature (negative lookahead)`, true},
		{`{"pattern":"(?<=a)b"}`, `unsupported pattern feature (lookbehind)`, true},
		{`{"pattern":"(?<!a)b"}`, `unsupported pattern feature (negative lookbehind)`, true},
		{`{"pattern":"(a)\\1"}`, `unsupported pattern feature (backreferences) in "(a)\\1"`, true},
		{`{"pattern":"(?<n>a)\\k<n>"}`, `unsupported pattern feature (named backreferences)`, true},
		{`{"pattern":"^\\u00e9+$"}`, `unsupported pattern feature (\u escapes`, true},
		{`{"pattern":"[^]"}`, `unsupported pattern feature (empty classes`, true},
		{`{"pattern":"[(?=a)]\\cJ"}`, `unsupported pattern feature (\c control escapes)`, true}, // (?= inside a class is literal
		{`{"patternProperties":{"^(?!_)":{}}}`, `#/patternProperties: unsupported keyword "patternProperties": unsupported pattern feature (negative lookahead) in "^(?!_)"`, true},
		{`{"items":{"pattern":"a{2,1}"}}`, `#/items/pattern: invalid schema: "a{2,1}" is not a valid regular expression (error parsing regexp: invalid repeat count`, false},
		{`{"pattern":"["}`, `#/pattern: invalid schema: "[" is not a valid regular expression (error parsing regexp: missing closing ]`, false},
	} {
		for _, opts := range [][]Option{nil, {Lenient(nil)}} {
			_, err := Convert([]byte(tc.schema), opts...)
			var ue *UnsupportedError
			var ie *InvalidSchemaError
			if err == nil || !strings.Contains(err.Error(), tc.want) || errorsAs(err, &ue) != tc.unsupported || errorsAs(err, &ie) == tc.unsupported {
				t.Errorf("Convert(%s, %d options) = %v (%T), want %q", tc.schema, len(opts), err, err, tc.want)
			}
		}
		if _, err := CompileSchema([]byte(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CompileSchema(%s) = %v, want %q", tc.schema, err, tc.want)
		}
	}
}

// Two objects whose declared names differ only in how a name set would
// be spelled with a separator ("a", "b" against "a\u0000b") get their own
// "other keys" languages: they once shared one, and the second object
// then refused its additional property "a".
func TestOtherKeysOfDistinctNameSets(t *testing.T) {
	schema := `{"type":"object","properties":{` +
		`"x":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":{"type":"integer"}},` +
		`"y":{"type":"object","properties":{"a\u0000b":{"type":"string"}},"additionalProperties":{"type":"integer"}}}}`
	_, g := compileGrammar(t, schema)
	r := earley.New(g)
	for _, s := range []string{`{"y":{"a":5}}`, `{"y":{"a\u0000b":"s","b":5}}`, `{"x":{"a":"s","a\u0000b":5}}`} {
		if !r.Accepts([]byte(s)) {
			t.Errorf("rejects %s", s)
		}
	}
	for _, s := range []string{`{"y":{"a":"s"}}`, `{"x":{"a\u0000b":"s"}}`, `{"x":{"a":5}}`} {
		if r.Accepts([]byte(s)) {
			t.Errorf("accepts %s", s)
		}
	}
	checkSound(t, schema, g, 50, 3, 300)
}

// A schema the meta-schema rejects in several places gets the same error
// every time: the validator's causes come in map order, and the one
// reported was once the first of them.
func TestMetaSchemaErrorDeterministic(t *testing.T) {
	schema := `{"type":"object","properties":{"a":{"type":5},"b":{"minLength":"x"},"c":{"type":7},"d":{"enum":3},"e":{"required":4},"f":{"maxItems":-1}}}`
	var first string
	for i := range 30 {
		_, err := Convert([]byte(schema))
		if err == nil {
			t.Fatal("invalid schema accepted")
		}
		if i == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("run %d: %v, first run: %s", i, err, first)
		}
	}
}

// TestCanonicalURIErrorDeterministic: the validator rejects a document in
// which subschemas share a canonical URI by naming a pair it took from a
// map; the error names the first two in document order, every time.
func TestCanonicalURIErrorDeterministic(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://x.test/r#","properties":{"a":{"id":"http://x.test/r#a"},"b":{"id":"http://x.test/r#b"},"c":{"id":"http://x.test/r#c"},"d":{"id":"http://x.test/r#d"}}}`,
			`"/properties/a" and "/properties/b" in http://x.test/r have same canonical-uri`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://x.test/s","definitions":{"p":{"$id":"q"},"q":{"$id":"other"},"r":{"$id":"q"},"s":{"$id":"http://x.test/q"}}}`,
			`"/definitions/p" and "/definitions/r" in http://x.test/s have same canonical-uri`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"$id":"http://x.test/n/a","properties":{"b":{"$id":"b"}}},"c":{"$id":"http://x.test/n/b"},"d":{"$id":"http://x.test/n/b"}}}`,
			`"/properties/a/properties/b" and "/properties/c" in  have same canonical-uri`},
	} {
		for i := range 30 {
			_, err := Convert([]byte(tc.schema))
			if err == nil {
				t.Fatalf("%s: accepted", tc.schema)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: run %d: %v, want %s", tc.schema, i, err, tc.want)
			}
		}
	}
}

// withoutDoneDisjunctions drops from copies exactly the anyOf and oneOf
// keywords the term has expanded, wherever a schema's $ref and allOf
// chains reach their owners; the originals are untouched.
func TestWithoutDoneDisjunctions(t *testing.T) {
	doc := []byte(`{"allOf":[{"$ref":"#/$defs/d"}],"anyOf":[{"type":"string"},{"const":1}],"$defs":{"d":{"oneOf":[{"enum":["a"]},{"type":"null"}],"anyOf":[{},{"type":"null"}]}}}`)
	s, locate, err := compileWith(doc, jsonschema.Draft2020)
	if err != nil {
		t.Fatal(err)
	}
	d := locate("/$defs/d")
	out := withoutDoneDisjunctions(term{ms: []*jsonschema.Schema{s}, done: []doneMark{{d, "oneOf"}, {s, "anyOf"}}})
	root := out.ms[0]
	if root == s || root.AnyOf != nil || len(s.AnyOf) != 2 {
		t.Fatalf("the root's done anyOf: copy %p (original %p), anyOf %d, original's %d", root, s, len(root.AnyOf), len(s.AnyOf))
	}
	dc := root.AllOf[0].Ref
	if dc == d || dc.OneOf != nil || len(dc.AnyOf) != 2 || len(d.OneOf) != 2 {
		t.Errorf("the definition's done oneOf (its anyOf not expanded): copy oneOf %d anyOf %d, original oneOf %d", len(dc.OneOf), len(dc.AnyOf), len(d.OneOf))
	}
	for _, v := range []any{"a", nil} {
		if err := validateSafe(root, v); err != nil {
			t.Errorf("%v: %v", v, err)
		}
	}
}

// TestFirstRefError: of several references the validator cannot load
// (another document) or resolve (nothing at the pointer or anchor), the
// error names the first in document order, with its schema's pointer,
// every time (the validator compiles a properties map in random order
// and names the first it reaches); a reference the validator ignores
// (beside $ref before 2019-09) is passed over, and a base from $id is
// applied.
func TestFirstRefError(t *testing.T) {
	remote := func(ptr, ref string) func(error) bool {
		return func(err error) bool {
			var rr *RemoteRefError
			return errorsAs(err, &rr) && rr.Pointer == ptr && rr.Ref == ref
		}
	}
	invalid := func(ptr, msg string) func(error) bool {
		return func(err error) bool {
			var ie *InvalidSchemaError
			return errorsAs(err, &ie) && ie.Pointer == ptr && ie.Msg == msg
		}
	}
	cases := []struct {
		schema string
		ok     func(error) bool
	}{
		{`{"properties":{"2":{"$ref":"0"},"7":{"0200":"01201","items":{"$ref":"1900"}}}}`, remote("#/properties/2", "file:///structgen/0")},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"b":{"$ref":"x.json"},"a":{"$ref":"y.json"},"c":{"$ref":"z.json"}}}`, remote("#/properties/b", "file:///structgen/x.json")},
		{`{"properties":{"a":{"$ref":"other.json#/x"},"b":{"$ref":"#/$defs/d"},"c":{"$ref":"third.json"}},"$defs":{"d":{}}}`, remote("#/properties/a", "file:///structgen/other.json")},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"$ref":"#/definitions/d","properties":{"x":{"$ref":"z.json"}}},"b":{"$ref":"y.json"},"c":{"$ref":"w.json"}},"definitions":{"d":{}}}`, remote("#/properties/b", "file:///structgen/y.json")},
		{`{"$id":"https://e.com/root.json","properties":{"a":{"$id":"sub/","properties":{"q":{"$ref":"w.json"}}},"b":{"$ref":"v.json"}}}`, remote("#/properties/a/properties/q", "https://e.com/sub/w.json")},
		{`{"$id":"https://e.com/root.json","properties":{"a":{"$id":"sub/x.json"},"b":{"$ref":"sub/x.json"},"c":{"$ref":"v.json"},"d":{"$ref":"u.json"}}}`, remote("#/properties/c", "https://e.com/v.json")},
		// a remote reference and one that resolves to nothing
		{`{"properties":{"8":{"$ref":"7"},"1":{"":"1","items":{"$ref":"#00000"}}},"91":["8"]}`, remote("#/properties/8", "file:///structgen/7")},
		{`{"properties":{"1":{"items":{"$ref":"#00000"}},"8":{"$ref":"7"}}}`, invalid("#/properties/1/items", `$ref "#00000" not found`)},
		{`{"properties":{"a":{"$ref":"#/$defs/x"},"b":{"$ref":"#/$defs/d"},"c":{"$ref":"#/$defs/y"}},"$defs":{"d":{}}}`, invalid("#/properties/a", `$ref "#/$defs/x" not found`)},
		// a reference that is no URL, and a remote one
		{`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"1":{"items":{"$ref":"%zz"}},"8":{"$ref":"x.json"}}}`, invalid("#/properties/1/items", `$ref: parse "%zz": invalid URL escape "%zz"`)},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"8":{"$ref":"x.json"},"1":{"items":{"$ref":"%zz"}}}}`, remote("#/properties/8", "file:///structgen/x.json")},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"$ref":"#/definitions/d/items/1"},"b":{"$ref":"#nope"}},"definitions":{"d":{"items":[{}]}}}`, invalid("#/properties/a", `$ref "#/definitions/d/items/1" not found`)},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"b":{"$ref":"#nope"},"a":{"$ref":"#/definitions/d/items/1"}},"definitions":{"d":{"items":[{}]}}}`, invalid("#/properties/b", `$ref "#nope" not found`)},
	}
	for _, tc := range cases {
		for i := 0; i < 20; i++ {
			_, err := Convert([]byte(tc.schema))
			if !tc.ok(err) {
				t.Fatalf("Convert(%s), try %d: %v", tc.schema, i, err)
			}
		}
	}
}
