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

	"github.com/dpstream/dpstream/kind"
)

// TestNoKindBranchesOutsideKinds keeps every release kind's logic in its
// own package under kind/: outside kind/ (and the DP mathematics under
// mechanism/ and accountant/, which name statistics and mechanisms, not
// release kinds) no non-test Go file may
// import a kind's package (kind/all links them in) or the statistical
// methods only kinds run (kindMethods; the noise and per-instance DP
// packages serve every kind), declare a constant or variable holding a
// kind's name, or compare with or switch on a kind's name. A newcomer
// adding a kind then touches kind/<name>/ and the list in kind/all, and
// nothing else.
// kindMethods are the packages under mechanism/ whose statistical methods
// only release kinds run.
var kindMethods = []string{"aggregate", "continual", "density", "keyed", "prediction", "quantile", "rr", "regression", "selection", "synthetic"}

func TestNoKindBranchesOutsideKinds(t *testing.T) {
	names := kind.Names()
	if len(names) == 0 {
		t.Fatal("no kinds registered")
	}
	isKind := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(lit.Value)
		return err == nil && slices.Contains(names, s)
	}
	root := filepath.Join("..", "..")
	found := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", "kind", "mechanism", "accountant", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		report := func(n ast.Node, what string) {
			found[rel] = append(found[rel], fset.Position(n.Pos()).String()+": "+what)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/dpstream/dpstream/kind/") && p != "github.com/dpstream/dpstream/kind/all" {
				report(imp, "imports "+p)
			}
			if slices.Contains(kindMethods, strings.TrimPrefix(p, "github.com/dpstream/dpstream/mechanism/")) {
				report(imp, "imports "+p+", which only kinds use")
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isKind(n.X) || isKind(n.Y)) {
					report(n, "compares with a kind's name")
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if isKind(e) {
						report(e, "switches on a kind's name")
					}
				}
			case *ast.ValueSpec:
				for _, v := range n.Values {
					if isKind(v) {
						report(v, "declares a kind's name")
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, places := range found {
		t.Errorf("%s branches on release kinds outside kind/ (move it behind the kind.Plan interface):\n  %s", file, strings.Join(places, "\n  "))
	}
}
