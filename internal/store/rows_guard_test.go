package store_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestRowLoopsGoThroughEachRow: outside rows.go, no code of the store
// calls Next on a *sql.Rows. A loop of its own can forget rows.Err and
// answer a result cut short by a failure as if it were whole; eachRow and
// scanRows never do.
func TestRowLoopsGoThroughEachRow(t *testing.T) {
	found, err := rowsNextCalls(".")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, c := range found {
		if c.file != "rows.go" {
			bad = append(bad, c.where)
		}
	}
	if len(bad) > 0 {
		t.Errorf("loops over *sql.Rows outside rows.go (use eachRow or scanRows):\n%s", strings.Join(bad, "\n"))
	}
}

// TestRowsNextCallsFindsLoops: the guard finds a loop over *sql.Rows, one
// over a variable declared without its type, and one through a field, and
// leaves other Next methods alone.
func TestRowsNextCallsFindsLoops(t *testing.T) {
	dir := t.TempDir()
	src := `package store

import "database/sql"

type cursor struct{}

func (cursor) Next() bool { return false }

type holder struct{ rows *sql.Rows }

func loops(db *sql.DB, h holder, c cursor) {
	rows, _ := db.Query("SELECT 1")
	for rows.Next() {
	}
	var r *sql.Rows
	for r.Next() {
	}
	for h.rows.Next() {
	}
	for c.Next() {
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "loops.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	found, err := rowsNextCalls(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range found {
		lines = append(lines, c.where)
	}
	if want := "loops.go:13 loops.go:16 loops.go:18"; strings.Join(lines, " ") != want {
		t.Fatalf("found %q, want %s", lines, want)
	}
}

type rowsNextCall struct {
	file  string // base name
	line  int
	where string // file:line
}

// rowsNextCalls type-checks the non-test Go files of dir (other packages
// than database/sql are left unresolved, which is enough to know the type
// of a *sql.Rows) and answers the calls of Next on a *sql.Rows, and the
// calls of Next on a receiver whose type it cannot tell.
func rowsNextCalls(dir string) ([]rowsNextCall, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	std := importer.Default()
	var sqlErr error
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if path == "database/sql" {
				p, err := std.Import(path)
				sqlErr = err
				return p, err
			}
			p := types.NewPackage(path, filepath.Base(path))
			p.MarkComplete()
			return p, nil
		}),
		Error: func(error) {}, // what the unresolved packages leave undefined
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf.Check("store", fset, files, info)
	if sqlErr != nil {
		return nil, sqlErr
	}
	var out []rowsNextCall
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Next" {
				return true
			}
			tv, known := info.Types[sel.X]
			if known && tv.Type != nil && tv.Type != types.Typ[types.Invalid] && tv.Type.String() != "*database/sql.Rows" {
				return true
			}
			pos := fset.Position(call.Pos())
			file := filepath.Base(pos.Filename)
			out = append(out, rowsNextCall{file: file, line: pos.Line, where: file + ":" + strconv.Itoa(pos.Line)})
			return true
		})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].file < out[j].file || out[i].file == out[j].file && out[i].line < out[j].line
	})
	return out, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
