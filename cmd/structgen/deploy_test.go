package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/structgen/structgen/deploy"
)

// TestDeployArgs parses the Kubernetes Deployment's container arguments
// (deploy/structgen.yaml) with this command's own flag parser, so that a
// flag the server does not have, or a value it rejects, fails here rather
// than in a crash-looping pod; and holds the pod's grace period to the
// server's drain bound.
func TestDeployArgs(t *testing.T) {
	m, err := deploy.Load()
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Server()
	if err != nil {
		t.Fatal(err)
	}
	var cl cli
	parser, err := kong.New(&cl, kong.Name("structgen"), kong.Exit(func(code int) { t.Fatalf("kong exited %d", code) }))
	if err != nil {
		t.Fatal(err)
	}
	if !hasCommand(parser.Model.Node, "serve") {
		t.Skip("structgen has no serve command in this build yet (issue 13): the manifest's flags cannot be checked")
	}
	// The model path exists in the pod, not here.
	model := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		if strings.HasPrefix(a, "--model=") {
			a = "--model=" + model
		}
		args[i] = a
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		t.Fatalf("structgen %s: %v", strings.Join(args, " "), err)
	}
	budget, err := m.DrainBudget()
	if err != nil {
		t.Fatal(err)
	}
	var drains []string
	for _, f := range kctx.Selected().Flags {
		if !strings.Contains(f.Name, "drain") && !strings.Contains(f.Name, "shutdown") && !strings.Contains(f.Name, "grace") {
			continue
		}
		d, ok := f.Target.Interface().(time.Duration)
		if !ok || f.Target.Kind() != reflect.Int64 {
			continue
		}
		drains = append(drains, f.Name)
		if d > budget {
			t.Errorf("serve --%s is %v: the pod's grace period (less preStop and %v) leaves %v", f.Name, d, deploy.ShutdownMargin, budget)
		}
	}
	if len(drains) == 0 {
		t.Errorf("structgen serve has no drain-time flag (a time.Duration named *drain*, *shutdown* or *grace*): the manifest's grace period cannot be checked against it")
	}
}

func hasCommand(n *kong.Node, name string) bool {
	for _, c := range n.Children {
		if c.Name == name {
			return true
		}
	}
	return false
}
