package racedetect

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCIRunsSkippedTests: every test that skips itself under -race
// (SkipStatistical) is named, with its package, in .ci/run's run without
// -race; otherwise CI would never run it.
func TestCIRunsSkippedTests(t *testing.T) {
	root := filepath.Join("..", "..")
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-run '\^\(([^)]*)\)\$'((?:\s+\\?\s*\./[^\s\\]+)+)`).FindSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run has no `go test -run '^(…)$' ./pkg …` line for the tests skipped under -race")
	}
	names := strings.Split(string(m[1]), "|")
	pkgs := strings.Fields(strings.ReplaceAll(string(m[2]), `\`, " "))
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			skips := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "SkipStatistical" {
					skips = true
				}
				return true
			})
			if !skips {
				continue
			}
			found++
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			pkg := "./" + filepath.ToSlash(rel)
			if !contains(names, fn.Name.Name) || !contains(pkgs, pkg) {
				t.Errorf("%s (%s) skips itself under -race but .ci/run's run without -race does not name it and its package %s", fn.Name.Name, path, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("no test calls SkipStatistical: the check checks nothing (remove it, or the .ci/run step)")
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
