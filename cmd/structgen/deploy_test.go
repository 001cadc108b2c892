package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/structgen/structgen/deploy"
)

// TestDeployArgs parses the Kubernetes Deployment's container arguments
// (deploy/structgen.yaml) with this command's own flag parser, so that a
// flag the server does not have, or a value it rejects, fails here rather
// than in a crash-looping pod; and checks that the API key reaches the
// server through the variable the Deployment sets.
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
		t.Fatal("structgen has no serve command: the manifest's flags cannot be checked")
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
	flags := map[string]*kong.Flag{}
	for _, f := range kctx.Selected().Flags {
		flags[f.Name] = f
	}
	if f := flags["drain-timeout"]; f == nil {
		t.Error("serve has no --drain-timeout: the pod's grace period cannot be held to the drain")
	} else if d, ok := f.Target.Interface().(time.Duration); !ok || d > budget {
		t.Errorf("serve --drain-timeout is %v: the pod's grace period (less preStop and %v) leaves %v", f.Target.Interface(), deploy.ShutdownMargin, budget)
	}
	if f := flags["api-key"]; f == nil || !slices.Contains(f.Envs, deploy.APIKeyEnv) {
		t.Errorf("serve --api-key does not read %s, where the Deployment puts the key", deploy.APIKeyEnv)
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
