package structgen_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/structgen/structgen"
	"github.com/structgen/structgen/engine"
)

type Item struct {
	SKU      string `json:"sku" jsonschema:"pattern=^[A-Z]{3}-[0-9]{4}$"`
	Quantity int    `json:"quantity" jsonschema:"minimum=1,maximum=99"`
}

type Order struct {
	ID     string `json:"id" jsonschema:"description=order number,pattern=^ORD-[0-9]{6}$"`
	Status string `json:"status" jsonschema:"enum=pending,enum=paid,enum=shipped"`
	Items  []Item `json:"items" jsonschema:"minItems=1,maxItems=3"`
	Note   string `json:"note,omitempty" jsonschema:"maxLength=40"`
}

// Generate without a model: the engine samples the schema of Order itself,
// so the value is random but always valid. With a model, pass
// engine.New(model) and a prompt.
func Example() {
	eng, err := engine.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	for seed := range uint32(3) {
		o, err := structgen.Generate[Order](context.Background(), eng, "", engine.WithSeed(seed))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(strings.HasPrefix(o.ID, "ORD-"), len(o.Items) >= 1 && len(o.Items) <= 3, o.Items[0].Quantity >= 1)
	}
	// Output:
	// true true true
	// true true true
	// true true true
}

func ExampleSchemaFor() {
	schema, err := structgen.SchemaFor[Item]()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(schema))
	// Output:
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"#/$defs/github.com_structgen_structgen_test.Item","$defs":{"github.com_structgen_structgen_test.Item":{"properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},"quantity":{"type":"integer","maximum":99,"minimum":1}},"additionalProperties":false,"type":"object","required":["sku","quantity"]}}}
}
