package llamacpp

import (
	"bytes"
	"flag"
	"go/ast"
	"go/build/constraint"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite "+notagFile+" from the llamacpp-tagged files")

// notagFile declares, for builds without the llamacpp tag, every exported
// name of the tagged files with the same documentation, so that go doc
// (which has no -tags flag) shows the whole API and code that uses it
// builds either way.
const notagFile = "notag.go"

// The stub is what notagSource makes of the tagged files; after changing
// their exported API run
//
//	go test ./engine/llamacpp -run TestNoTagStub -update
func TestNoTagStub(t *testing.T) {
	want, err := notagSource(".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(notagFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(notagFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the llamacpp-tagged files declare: run go test ./engine/llamacpp -run TestNoTagStub -update\n--- want\n%s", notagFile, want)
	}
}

// go doc finds the tagged API without the tag (the issue: "no symbol
// Load").
func TestGoDocWithoutTag(t *testing.T) {
	for sym, want := range map[string]string{
		"Load":              "func Load(path string, opts Options) (*Model, error)",
		"Model.Decode":      "func (m *Model) Decode(b *engine.Batch) error",
		"NewGrammarPeer":    "func NewGrammarPeer(gbnf string, vocab [][]byte, eog []int32) (*GrammarPeer, error)",
		"SetLogOutput":      "func SetLogOutput(w io.Writer)",
		"Options.VocabOnly": "VocabOnly",
	} {
		out, err := exec.Command("go", "doc", ".", sym).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("go doc . %s: %v\n%s\nwant %q", sym, err, out, want)
		}
	}
}

// notagSource builds the stub file from the .go files in dir that only
// the llamacpp tag selects: exported functions and methods with their
// documentation and a body that returns ErrNotBuilt (or panics with it
// when the function returns no error), exported types (struct fields that
// are not exported dropped), exported constants and variables, and the
// blank interface checks (var _ I = …).
func notagSource(dir string) ([]byte, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var body bytes.Buffer
	imports := map[string]string{} // name → path, from the tagged files
	fset := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if !tagOnly(f) {
			continue
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if is.Name != nil {
				name = is.Name.Name
			}
			imports[name] = p
		}
		text := func(n any) string {
			var b bytes.Buffer
			if err := printer.Fprint(&b, fset, n); err != nil {
				panic(err)
			}
			return b.String()
		}
		doc := func(cg *ast.CommentGroup) string {
			if cg == nil {
				return ""
			}
			return string(src[fset.Position(cg.Pos()).Offset:fset.Position(cg.End()).Offset]) + "\n"
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !ast.IsExported(recvType(d.Recv))) {
					continue
				}
				sig := &ast.FuncDecl{Recv: d.Recv, Name: d.Name, Type: d.Type}
				body.WriteString("\n" + doc(d.Doc) + text(sig) + " {\n" + stubBody(d.Type, text) + "}\n")
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						var node any = s
						if st, ok := s.Type.(*ast.StructType); ok {
							var comments []*ast.CommentGroup
							s.Type, comments = exportedFields(st)
							node = &printer.CommentedNode{Node: s, Comments: comments}
						}
						body.WriteString("\n" + doc(d.Doc) + doc(s.Doc) + "type " + text(node) + "\n")
					case *ast.ValueSpec:
						if len(s.Names) != 1 || !(s.Names[0].IsExported() || s.Names[0].Name == "_" && s.Type != nil) {
							continue
						}
						cg := s.Doc
						if !d.Lparen.IsValid() {
							cg = d.Doc
						}
						body.WriteString("\n" + doc(cg) + d.Tok.String() + " " + text(s) + "\n")
					}
				}
			}
		}
	}
	used := map[string]bool{}
	probe, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+body.String(), 0)
	if err != nil {
		return nil, err
	}
	ast.Inspect(probe, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := se.X.(*ast.Ident); ok && imports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var out bytes.Buffer
	out.WriteString("// Code generated by go test -run TestNoTagStub -update; DO NOT EDIT.\n\n//go:build !llamacpp\n\npackage llamacpp\n\nimport (\n")
	var std, other []string
	for n := range used {
		if p := imports[n]; strings.Contains(strings.Split(p, "/")[0], ".") {
			other = append(other, n)
		} else {
			std = append(std, n)
		}
	}
	for i, group := range [][]string{std, other} {
		sort.Slice(group, func(i, j int) bool { return imports[group[i]] < imports[group[j]] })
		if i > 0 && len(std) > 0 && len(group) > 0 {
			out.WriteString("\n")
		}
		for _, n := range group {
			p := imports[n]
			if p[strings.LastIndex(p, "/")+1:] != n {
				out.WriteString(n + " ")
			}
			out.WriteString(strconv.Quote(p) + "\n")
		}
	}
	out.WriteString(")\n")
	out.Write(body.Bytes())
	return format.Source(out.Bytes())
}

// tagOnly reports whether f is built with the llamacpp tag and not
// without it.
func tagOnly(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return false
			}
			with := expr.Eval(func(tag string) bool { return tag == "llamacpp" })
			without := expr.Eval(func(string) bool { return false })
			return with && !without
		}
	}
	return false
}

func recvType(fl *ast.FieldList) string {
	t := fl.List[0].Type
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// exportedFields keeps the exported fields of a struct and their
// comments; a blank field stands for the others (go doc then says it has
// unexported fields).
func exportedFields(st *ast.StructType) (*ast.StructType, []*ast.CommentGroup) {
	out := &ast.StructType{Struct: st.Struct, Fields: &ast.FieldList{Opening: st.Fields.Opening, Closing: st.Fields.Closing}}
	var comments []*ast.CommentGroup
	hidden := false
	for _, f := range st.Fields.List {
		var names []*ast.Ident
		for _, n := range f.Names {
			if n.IsExported() {
				names = append(names, n)
			}
		}
		if len(names) == 0 || len(names) < len(f.Names) {
			hidden = true
		}
		if len(names) > 0 {
			out.Fields.List = append(out.Fields.List, &ast.Field{Doc: f.Doc, Names: names, Type: f.Type, Comment: f.Comment})
			for _, cg := range []*ast.CommentGroup{f.Doc, f.Comment} {
				if cg != nil {
					comments = append(comments, cg)
				}
			}
		}
	}
	if hidden {
		out.Fields.List = append(out.Fields.List, &ast.Field{Names: []*ast.Ident{ast.NewIdent("_")}, Type: ast.NewIdent("struct{}")})
	}
	return out, comments
}

// stubBody returns zero values and ErrNotBuilt when the last result is an
// error, does nothing when there are no results, and panics with
// ErrNotBuilt otherwise (methods of values that cannot exist without the
// tag).
func stubBody(ft *ast.FuncType, text func(any) string) string {
	var results []ast.Expr
	if ft.Results != nil {
		for _, f := range ft.Results.List {
			for range max(1, len(f.Names)) {
				results = append(results, f.Type)
			}
		}
	}
	if len(results) == 0 {
		return ""
	}
	if id, ok := results[len(results)-1].(*ast.Ident); !ok || id.Name != "error" {
		return "\tpanic(ErrNotBuilt)\n"
	}
	var b strings.Builder
	var ret []string
	for i, r := range results[:len(results)-1] {
		name := "r" + strconv.Itoa(i)
		b.WriteString("\tvar " + name + " " + text(r) + "\n")
		ret = append(ret, name)
	}
	b.WriteString("\treturn " + strings.Join(append(ret, "ErrNotBuilt"), ", ") + "\n")
	return b.String()
}
