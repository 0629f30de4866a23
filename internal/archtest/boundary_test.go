package archtest

import (
	"go/ast"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestPublicAPIHasNoInternalTypes checks the public boundary: no exported
// function, method, field, interface method, variable or type of a public
// package (one outside internal/ and cmd/) is written in a type from an
// internal package, which a caller outside the module could not name. A
// public package that needs such a type re-exports it with a documented
// alias (type X = internalpkg.Y), the one form allowed here.
func TestPublicAPIHasNoInternalTypes(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		if !isPublic(p.dir) {
			continue
		}
		for i, f := range p.files {
			internal := internalImports(f)
			if len(internal) == 0 {
				continue
			}
			for _, leak := range leaks(f, internal) {
				t.Errorf("%s/%s: exported %s uses internal type %s: make the type public or re-export it with an alias", p.dir, p.names[i], leak[0], leak[1])
			}
		}
	}
}

func isPublic(dir string) bool {
	return !(dir == "internal" || strings.HasPrefix(dir, "internal/") || strings.Contains(dir, "/internal/") ||
		dir == "cmd" || strings.HasPrefix(dir, "cmd/"))
}

// internalImports maps a file's local import names to the internal
// packages they name.
func internalImports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(ip, "/internal/") {
			continue
		}
		ln := ip[strings.LastIndex(ip, "/")+1:]
		if imp.Name != nil {
			ln = imp.Name.Name
		}
		m[ln] = ip
	}
	return m
}

// leaks returns, for each exported declaration of f written in an internal
// type, the declaration's name and the type.
func leaks(f *ast.File, internal map[string]string) [][2]string {
	var out [][2]string
	seen := map[[2]string]bool{}
	check := func(name string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
				k := [2]string{name, id.Name + "." + sel.Sel.Name}
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
			return false
		})
	}
	checkFields := func(prefix string, fl *ast.FieldList, onlyExported bool) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			if onlyExported {
				exported := false
				for _, n := range fd.Names {
					exported = exported || n.IsExported()
				}
				if len(fd.Names) == 0 { // embedded: exported if its type name is
					exported = embeddedExported(fd.Type)
				}
				if !exported {
					continue
				}
			}
			check(prefix, fd.Type)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil {
				recv := receiverName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			checkFields(name, d.Type.Params, false)
			checkFields(name, d.Type.Results, false)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() || s.Assign.IsValid() {
						continue
					}
					switch tt := s.Type.(type) {
					case *ast.StructType:
						checkFields(s.Name.Name, tt.Fields, true)
					case *ast.InterfaceType:
						checkFields(s.Name.Name, tt.Methods, true)
					default:
						check(s.Name.Name, s.Type)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							check(n.Name, s.Type)
						}
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+out[i][1] < out[j][0]+out[j][1] })
	return out
}

func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func embeddedExported(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.StarExpr:
		return embeddedExported(x.X)
	case *ast.SelectorExpr:
		return x.Sel.IsExported()
	case *ast.Ident:
		return x.IsExported()
	}
	return false
}
