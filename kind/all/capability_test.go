package all_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stageInterfaces are the interfaces of package kind that the stages may
// name: the contract of every kind (Kind, Plan, and the statistic the
// accumulate stage keeps: Statistic, Accumulator), the per-instance DP
// seam of a release's Fit (PDPFit, PDPRowLosses), and the one capability
// through which state a kind keeps across windows and restarts reaches the
// release stage — kind.Stateful, its kind.State and the kind.Budget a
// State charges — with the one query seam a State may add (kind.Answerer
// and its kind.QueryBudget). Every other interface package kind declares
// is a capability that the stages must not branch on.
var stageInterfaces = []string{"Kind", "Plan", "Statistic", "Accumulator", "PDPFit", "PDPRowLosses",
	"Stateful", "State", "Budget", "Answerer", "QueryBudget"}

// capabilityTypes are the non-interface types of package kind that only a
// forbidden capability uses (a continual run's step log, the shape of a
// kind's running totals).
var capabilityTypes = []string{"Log", "TotalsShape"}

// TestStagesNameOneStateCapability keeps what kinds keep across windows
// and restarts behind kind.Stateful: no non-test Go file under stages/
// names an interface of package kind other than stageInterfaces (e.g.
// kind.Running, kind.Run, kind.Totals, kind.Predictor, kind.Model, and
// any capability added later), nor a type only such a capability uses, so
// that a kind with restart state (a continual release's runs, a prediction
// release's models) touches its own package only, never the release
// stage, its ledger fields or its checkpoints.
func TestStagesNameOneStateCapability(t *testing.T) {
	root := filepath.Join("..", "..")
	forbidden := slices.Clone(capabilityTypes)
	for _, name := range kindInterfaces(t, filepath.Join(root, "kind")) {
		if !slices.Contains(stageInterfaces, name) {
			forbidden = append(forbidden, name)
		}
	}
	for _, must := range []string{"Running", "Run", "Totals", "Predictor", "Model"} {
		if !slices.Contains(forbidden, must) {
			t.Fatalf("kind.%s is not among the capabilities checked (%v)", must, forbidden)
		}
	}
	found := stagesNaming(t, filepath.Join(root, "stages"), root, forbidden)
	for file, places := range found {
		t.Errorf("%s names kind capabilities beyond kind.Stateful (move the logic into the kind's State):\n  %s", file, strings.Join(places, "\n  "))
	}
}

// kindInterfaces returns the exported interface types declared in the
// non-test Go files of package kind (dir).
func kindInterfaces(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, sp := range g.Specs {
				ts := sp.(*ast.TypeSpec)
				if _, isInterface := ts.Type.(*ast.InterfaceType); isInterface && ts.Name.IsExported() {
					out = append(out, ts.Name.Name)
				}
			}
		}
	}
	return out
}

// stagesNaming returns, by file (relative to root), the places in dir's
// non-test Go files that name kind.X for X in names (kind being the
// import name of package kind in the file).
func stagesNaming(t *testing.T, dir, root string, names []string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		name := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/dpstream/dpstream/kind" {
				name = "kind"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && slices.Contains(names, sel.Sel.Name) {
				found[filepath.ToSlash(rel)] = append(found[filepath.ToSlash(rel)], fset.Position(sel.Pos()).String()+": names kind."+sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
