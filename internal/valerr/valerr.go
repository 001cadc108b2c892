// Package valerr reads the errors of the JSON Schema validator
// (santhosh-tekuri/jsonschema).
package valerr

import (
	"cmp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Leaves returns the causes of a validation error that have no causes of
// their own, sorted by instance location, keyword location and message:
// the validator lists causes in map order, so the first of them changes
// from run to run.
func Leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var out []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortFunc(out, func(a, b *jsonschema.ValidationError) int {
		return cmp.Or(strings.Compare(a.InstanceLocation, b.InstanceLocation),
			strings.Compare(a.KeywordLocation, b.KeywordLocation), strings.Compare(a.Message, b.Message))
	})
	return out
}
