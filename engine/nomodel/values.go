package nomodel

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/brianvoe/gofakeit/v7"
)

// A gen is a realistic value generator, chosen for a value by its format,
// its property name (and its parent's) and its title and description.
type gen uint8

const (
	genNone gen = iota
	// strings by format
	genDateTime
	genDate
	genTime
	genDuration
	genEmail
	genHostname
	genURI
	genURIRef
	genUUID
	genIPv4
	genIPv6
	genJSONPointer
	// strings by name
	genFirstName
	genLastName
	genFullName
	genUsername
	genPhone
	genStreet
	genAddress
	genCity
	genState
	genCountry
	genCountryCode
	genZip
	genCompany
	genTitle
	genJobTitle
	genProductName
	genDescription
	genSentence
	genID
	genSKU
	genCurrency
	genColor
	genLanguage
	genVersion
	genWord
	// numbers by name
	genPrice
	genQuantity
	genAge
	genYear
	genRating
	genPercent
	genLatitude
	genLongitude
	genCount
	numGens
)

var genNames = [numGens]string{"none", "date-time", "date", "time", "duration", "email", "hostname", "uri",
	"uri-reference", "uuid", "ipv4", "ipv6", "json-pointer", "first-name", "last-name", "name", "username",
	"phone", "street", "address", "city", "state", "country", "country-code", "postal-code", "company",
	"title", "job-title", "product-name", "description", "sentence", "id", "sku", "currency", "color",
	"language", "version", "word", "price", "quantity", "age", "year", "rating", "percent", "latitude",
	"longitude", "count"}

func (g gen) String() string {
	if g < numGens {
		return genNames[g]
	}
	return fmt.Sprintf("gen(%d)", int(g))
}

// formatGen maps a JSON Schema format to its generator.
func formatGen(format string) gen {
	switch format {
	case "date-time":
		return genDateTime
	case "date":
		return genDate
	case "time":
		return genTime
	case "duration":
		return genDuration
	case "email", "idn-email":
		return genEmail
	case "hostname", "idn-hostname":
		return genHostname
	case "uri", "iri", "url":
		return genURI
	case "uri-reference", "iri-reference":
		return genURIRef
	case "uuid":
		return genUUID
	case "ipv4":
		return genIPv4
	case "ipv6":
		return genIPv6
	case "json-pointer":
		return genJSONPointer
	}
	return genNone
}

// nameWords splits a property name into lower-case words: "firstName",
// "first_name", "first-name" and "First Name" all give [first name].
func nameWords(dst []string, name string) []string {
	start := -1
	prevLower := false
	for i, r := range name {
		isLetter := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !isLetter {
			if start >= 0 {
				dst = append(dst, strings.ToLower(name[start:i]))
				start = -1
			}
			prevLower = false
			continue
		}
		if start >= 0 && unicode.IsUpper(r) && prevLower {
			dst = append(dst, strings.ToLower(name[start:i]))
			start = -1
		}
		if start < 0 {
			start = i
		}
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	if start >= 0 {
		dst = append(dst, strings.ToLower(name[start:]))
	}
	return dst
}

// nameGen chooses a generator from a property's name words (the last
// word weighs most: "customer_email" is an email, "email_verified" is
// not a string anyway) and its parent's name (a "name" inside a
// "product" is a product name). numeric selects the number generators.
func nameGen(words, parent []string, numeric bool) gen {
	if len(words) == 0 {
		return genNone
	}
	last := words[len(words)-1]
	has := func(ws ...string) bool {
		for _, w := range words {
			for _, x := range ws {
				if w == x {
					return true
				}
			}
		}
		return false
	}
	in := func(l []string, ws ...string) bool {
		for _, w := range l {
			for _, x := range ws {
				if w == x {
					return true
				}
			}
		}
		return false
	}
	if numeric {
		switch {
		case has("lat", "latitude"):
			return genLatitude
		case has("lng", "lon", "long", "longitude"):
			return genLongitude
		case has("price", "amount", "cost", "total", "subtotal", "fee", "balance", "salary", "payment", "tax", "revenue", "budget"):
			return genPrice
		case has("qty", "quantity"):
			return genQuantity
		case last == "age" || has("age"):
			return genAge
		case last == "year" || last == "yr":
			return genYear
		case has("rating", "stars", "score"):
			return genRating
		case has("percent", "percentage", "pct", "discount", "rate", "ratio"):
			return genPercent
		case has("count", "number", "num", "size", "length", "width", "height", "weight", "limit", "duration", "seconds", "minutes", "days", "level", "page", "retries"):
			return genCount
		case last == "id" || strings.HasSuffix(last, "id"):
			return genID
		}
		return genNone
	}
	switch last {
	case "email", "mail", "emailaddress":
		return genEmail
	case "phone", "telephone", "tel", "mobile", "fax", "cell", "phonenumber":
		return genPhone
	case "city", "town":
		return genCity
	case "state", "province", "region", "county":
		if in(parent, "address", "location", "billing", "shipping") || has("province", "region", "county") {
			return genState
		}
	case "country":
		return genCountry
	case "zip", "zipcode", "postcode", "postal", "postalcode":
		return genZip
	case "street", "street1", "street2", "line1", "line2", "address1", "address2":
		return genStreet
	case "address":
		return genAddress
	case "company", "organization", "organisation", "employer", "business", "org", "vendor", "manufacturer", "brand", "publisher":
		return genCompany
	case "url", "uri", "website", "homepage", "link", "href", "webpage", "site":
		return genURI
	case "domain", "host", "hostname":
		return genHostname
	case "username", "login", "handle", "nickname", "screenname":
		return genUsername
	case "uuid", "guid":
		return genUUID
	case "sku", "upc", "ean", "isbn", "barcode":
		return genSKU
	case "currency":
		return genCurrency
	case "color", "colour":
		return genColor
	case "language", "lang", "locale":
		return genLanguage
	case "version":
		return genVersion
	case "ip", "ipv4":
		return genIPv4
	case "ipv6":
		return genIPv6
	case "description", "summary", "notes", "note", "comment", "comments", "bio", "about", "message", "text", "body", "content", "details", "remarks", "reason", "instructions":
		return genSentence
	case "title", "headline", "subject", "heading", "caption":
		if has("job", "position") {
			return genJobTitle
		}
		return genTitle
	case "code":
		switch {
		case has("country"):
			return genCountryCode
		case has("currency"):
			return genCurrency
		case has("zip", "postal", "post"):
			return genZip
		case has("language", "lang"):
			return genLanguage
		}
		return genSKU
	case "id", "identifier", "ref", "reference", "key", "number", "no":
		switch {
		case has("phone", "telephone", "mobile"):
			return genPhone
		case has("order", "invoice", "tracking", "account", "customer", "product", "item", "ticket", "reference"):
			return genSKU
		}
		return genID
	case "date", "day", "birthday", "dob", "birthdate":
		return genDate
	case "time", "timestamp", "datetime", "at":
		return genDateTime
	case "name", "fullname":
		switch {
		case has("first", "given", "fore"):
			return genFirstName
		case has("last", "family", "sur"):
			return genLastName
		case has("user", "account", "screen"):
			return genUsername
		case has("company", "business", "organization", "org", "brand", "vendor"):
			return genCompany
		case has("product", "item", "article", "goods"):
			return genProductName
		case has("file"), has("city"), has("country"):
			return genWord
		}
		switch {
		case in(parent, "product", "products", "item", "items", "article", "articles", "goods", "sku", "line", "lines"):
			return genProductName
		case in(parent, "company", "organization", "organisation", "employer", "business", "vendor", "merchant", "store", "shop"):
			return genCompany
		case in(parent, "city", "country", "region", "category", "categories", "tag", "tags", "project", "team", "group", "file", "event"):
			return genTitle
		}
		return genFullName
	case "firstname", "forename", "givenname":
		return genFirstName
	case "lastname", "surname", "familyname":
		return genLastName
	case "job", "occupation", "position", "role", "profession":
		return genJobTitle
	case "tag", "tags", "category", "label", "keyword", "keywords", "type", "kind", "status", "group", "topic", "genre":
		return genWord
	}
	switch {
	case has("email"):
		return genEmail
	case has("phone"):
		return genPhone
	case has("url", "uri"):
		return genURI
	}
	return genNone
}

// annotationGen chooses a generator from a title or description when the
// name gives none ("The customer's e-mail address").
func annotationGen(title, desc string, numeric bool) gen {
	var words []string
	for _, s := range []string{title, desc} {
		if s == "" {
			continue
		}
		if len(s) > 200 {
			s = s[:200]
		}
		words = nameWords(words[:0], s)
		for i := len(words) - 1; i >= 0; i-- {
			// the head noun of a short phrase is usually its last word
			if g := nameGen(words[i:i+1], nil, numeric); g != genNone && g != genWord && g != genID {
				return g
			}
		}
	}
	return genNone
}

// faker draws realistic values with gofakeit, from the sampler's random
// stream, around an anchor date.
type faker struct {
	f      *gofakeit.Faker
	anchor time.Time
	window time.Duration
}

// dateIn returns a time in the window the name suggests: past for most
// names ("created_at"), future for deadlines ("expires_at", "due_date"),
// 18 to 90 years ago for birth dates.
func (fk *faker) dateIn(words []string) time.Time {
	lo, hi := fk.anchor.Add(-fk.window), fk.anchor.Add(fk.window)
	for _, w := range words {
		switch w {
		case "birth", "birthday", "dob", "birthdate", "born":
			return fk.f.DateRange(fk.anchor.AddDate(-90, 0, 0), fk.anchor.AddDate(-18, 0, 0))
		case "expires", "expiry", "expiration", "due", "deadline", "until", "end", "ends", "next", "scheduled", "valid":
			lo = fk.anchor
		case "created", "updated", "modified", "deleted", "published", "last", "started", "start", "joined", "registered", "signup", "ordered", "paid", "shipped", "delivered", "completed", "closed", "issued", "posted", "sent", "received":
			hi = fk.anchor
		}
	}
	return fk.f.DateRange(lo, hi)
}

// text returns a realistic string for generator g (words: the name).
func (fk *faker) text(g gen, words []string) string {
	f := fk.f
	switch g {
	case genDateTime:
		t := fk.dateIn(words).UTC().Truncate(time.Second)
		return t.Format("2006-01-02T15:04:05Z")
	case genDate:
		return fk.dateIn(words).Format("2006-01-02")
	case genTime:
		return fmt.Sprintf("%02d:%02d:%02dZ", f.IntN(24), f.IntN(60), f.IntN(60))
	case genDuration:
		switch f.IntN(4) {
		case 0:
			return fmt.Sprintf("PT%dM", 1+f.IntN(59))
		case 1:
			return fmt.Sprintf("PT%dH%dM", 1+f.IntN(23), f.IntN(60))
		case 2:
			return fmt.Sprintf("P%dD", 1+f.IntN(30))
		}
		return fmt.Sprintf("P%dDT%dH", 1+f.IntN(6), 1+f.IntN(23))
	case genEmail:
		return f.Email()
	case genHostname:
		return f.DomainName()
	case genURI:
		return f.URL()
	case genURIRef:
		return "/" + f.UrlSlug(1+f.IntN(2)) + "/" + strconv.Itoa(1+f.IntN(999))
	case genUUID:
		return f.UUID()
	case genIPv4:
		return f.IPv4Address()
	case genIPv6:
		return f.IPv6Address()
	case genJSONPointer:
		return "/" + strings.ToLower(f.Noun()) + "/" + strconv.Itoa(f.IntN(10))
	case genFirstName:
		return f.FirstName()
	case genLastName:
		return f.LastName()
	case genFullName:
		return f.Name()
	case genUsername:
		return f.Username()
	case genPhone:
		if f.IntN(2) == 0 {
			return f.PhoneFormatted()
		}
		return "+1" + f.Phone()
	case genStreet:
		return f.Street()
	case genAddress:
		a := f.Address()
		return a.Street + ", " + a.City + ", " + a.State + " " + a.Zip
	case genCity:
		return f.City()
	case genState:
		return f.State()
	case genCountry:
		return f.Country()
	case genCountryCode:
		return f.CountryAbr()
	case genZip:
		return f.Zip()
	case genCompany:
		return f.Company()
	case genTitle:
		return titleCase(f.Phrase())
	case genJobTitle:
		return f.JobTitle()
	case genProductName:
		return f.ProductName()
	case genDescription:
		return f.ProductDescription()
	case genSentence:
		return f.Sentence()
	case genID:
		return f.UUID()
	case genSKU:
		return strings.ToUpper(f.Lexify("???")) + "-" + f.Numerify("####")
	case genCurrency:
		return f.CurrencyShort()
	case genColor:
		return f.SafeColor()
	case genLanguage:
		return f.LanguageAbbreviation()
	case genVersion:
		return f.AppVersion()
	case genWord:
		return f.Noun()
	}
	// A plain string: a few words.
	switch f.IntN(3) {
	case 0:
		return f.Noun()
	case 1:
		return f.Adjective() + " " + f.Noun()
	}
	return f.Phrase()
}

func titleCase(s string) string {
	b := []byte(s)
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == ' '
	}
	return string(b)
}

// fitLength cuts or pads text (in characters) into [lo, hi] (-1: no
// bound), cutting at a word boundary where it can and padding with
// words.
func (fk *faker) fitLength(text string, lo, hi int) string {
	n := utf8.RuneCountInString(text)
	if hi >= 0 && n > hi {
		cut := text
		for i := range text {
			if utf8.RuneCountInString(text[:i]) > hi {
				break
			}
			cut = text[:i]
		}
		if j := strings.LastIndexByte(cut, ' '); j > 0 && j >= len(cut)/2 {
			cut = cut[:j]
		}
		text = strings.TrimRight(cut, " ,.;:-")
		if text == "" && hi > 0 {
			text = cut
		}
		n = utf8.RuneCountInString(text)
	}
	for lo >= 0 && n < lo {
		w := " " + strings.ToLower(fk.f.Noun())
		if n == 0 {
			w = w[1:]
		}
		if hi >= 0 && n+utf8.RuneCountInString(w) > hi {
			w = fk.f.LetterN(uint(lo - n))
		}
		text += w
		n = utf8.RuneCountInString(text)
	}
	return text
}

// numRange is the plausible range of a number generator, and the
// decimals it is written with.
func numRange(g gen, integer bool) (lo, hi float64, decimals int) {
	switch g {
	case genPrice:
		lo, hi, decimals = 1, 500, 2
	case genQuantity:
		lo, hi = 1, 10
	case genAge:
		lo, hi = 18, 90
	case genYear:
		lo, hi = 1990, 2030
	case genRating:
		lo, hi, decimals = 1, 5, 1
	case genPercent:
		lo, hi, decimals = 0, 50, 1
	case genLatitude:
		lo, hi, decimals = -90, 90, 6
	case genLongitude:
		lo, hi, decimals = -180, 180, 6
	case genCount:
		lo, hi = 1, 100
	case genID:
		lo, hi = 1, 99999
	default:
		lo, hi, decimals = 0, 1000, 2
	}
	if integer {
		decimals = 0
	}
	return
}

// number returns a number for view v (integer: no fraction) in the
// plausible range of generator g intersected with the schema's bounds,
// and a multiple of multipleOf when there is one. ok is false when the
// bounds leave nothing to draw from.
func (fk *faker) number(v *view, g gen, integer bool) (string, bool) {
	lo, hi, dec := numRange(g, integer)
	f := fk.f
	if g == genNone && !integer && f.IntN(2) == 0 {
		dec = 0 // plain numbers: whole half of the time
	}
	var slo, shi float64 = math.Inf(-1), math.Inf(1)
	if v.min != nil {
		slo, _ = v.min.Float64()
	}
	if v.max != nil {
		shi, _ = v.max.Float64()
	}
	if slo > shi {
		return "", false
	}
	// Intersect the plausible range with the bounds; where they do not
	// meet, draw near the bound (or across both bounds when finite).
	nlo, nhi := max(lo, slo), min(hi, shi)
	if nlo > nhi {
		switch {
		case !math.IsInf(slo, 0) && !math.IsInf(shi, 0):
			nlo, nhi = slo, shi
		case !math.IsInf(slo, 0):
			nlo, nhi = slo, slo+max(hi-lo, 1)
		default:
			nlo, nhi = shi-max(hi-lo, 1), shi
		}
	}
	if m := v.multipleOf; m != nil {
		mf, _ := m.Float64()
		if mf <= 0 || math.IsInf(nlo, 0) || math.IsInf(nhi, 0) {
			return "", false
		}
		klo, khi := math.Ceil(nlo/mf), math.Floor(nhi/mf)
		if klo > khi || khi-klo > 1e15 {
			return "", false
		}
		k := klo + math.Floor(f.Float64()*(khi-klo+1))
		r := new(big.Rat).Mul(m, new(big.Rat).SetFloat64(k))
		if r.IsInt() {
			return r.Num().String(), true
		}
		if integer {
			return "", false
		}
		return ratDecimal(r), true
	}
	x := nlo + f.Float64()*(nhi-nlo)
	if integer || dec == 0 {
		a, b := math.Ceil(nlo), math.Floor(nhi)
		if a > b {
			if integer {
				return "", false
			}
			return strconv.FormatFloat(x, 'f', -1, 64), true
		}
		x = a + math.Floor(f.Float64()*(b-a+1))
		if x > b {
			x = b
		}
		return strconv.FormatFloat(x, 'f', 0, 64), true
	}
	s := strconv.FormatFloat(x, 'f', dec, 64)
	if strings.ContainsRune(s, '.') {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s, true
}

// ratDecimal writes a rational with a finite decimal expansion in plain
// decimal notation (up to 20 decimals).
func ratDecimal(r *big.Rat) string {
	s := r.FloatString(20)
	if strings.ContainsRune(s, '.') {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// inBounds reports whether the number text satisfies the view's bounds
// (the grammar checks them exactly; this saves a rejected proposal).
func inBounds(v *view, text string) bool {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return false
	}
	if v.min != nil {
		if c := r.Cmp(v.min); c < 0 || (c == 0 && v.exclMin) {
			return false
		}
	}
	if v.max != nil {
		if c := r.Cmp(v.max); c > 0 || (c == 0 && v.exclMax) {
			return false
		}
	}
	return true
}

// appendQuoted appends s as a JSON string in the canonical spelling the
// grammars of jsonschema2gbnf accept for every string: `\"` `\\`, the
// short escapes \b \f \n \r \t, \u00XX (lower-case hex) for the other
// control characters, everything else raw.
func appendQuoted(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

// appendJSON appends a decoded JSON value (objects as *object, numbers as
// json.Number or float64) in canonical form: no whitespace, objects in
// their document order. Anything else (a compiled schema's map, whose key
// order is lost) is written as null, which the grammar then rejects in
// its place.
func appendJSON(dst []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, v)
	case string:
		return appendQuoted(dst, v)
	case fmt.Stringer: // json.Number
		return append(dst, v.String()...)
	case float64:
		return strconv.AppendFloat(dst, v, 'f', -1, 64)
	case []any:
		dst = append(dst, '[')
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, x)
		}
		return append(dst, ']')
	case *object:
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendQuoted(dst, k)
			dst = append(dst, ':')
			dst = appendJSON(dst, v.vals[i])
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}
