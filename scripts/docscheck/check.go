package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// pkg is what the check knows of one package: its top-level names and the
// members (methods, fields, interface methods) of each of its types, with
// the types each embeds.
type pkg struct {
	path    string // import path below the module, "" for the root
	names   map[string]bool
	members map[string]map[string]bool
	embeds  map[string][]string
}

// module indexes the Go files of a tree by package name and path.
type module struct {
	root    string            // the module's folder, for quoted paths
	ignored map[string]bool   // root folders .gitignore marks as output
	byName  map[string][]*pkg // package name and last path element
	byPath  map[string]*pkg
	types   map[string][]*pkg // type name → the packages declaring it
}

// skipDir reports whether a folder holds no Go of the module: hidden
// folders, tools, test data, node packages.
func skipDir(name string) bool {
	return name != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "node_modules" || name == "vendor")
}

// loadModule parses the declarations (not the bodies' meaning) of every Go
// file under root, tests included.
func loadModule(root string) (*module, error) {
	m := &module{root: root, ignored: rootIgnored(root), byName: map[string][]*pkg{}, byPath: map[string]*pkg{}, types: map[string][]*pkg{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(d.Name()) && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("docscheck: %w", err)
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		m.add(rel, f)
		return nil
	})
	return m, err
}

func (m *module) add(rel string, f *ast.File) {
	name := strings.TrimSuffix(f.Name.Name, "_test")
	pk := m.byPath[rel]
	if pk == nil {
		pk = &pkg{path: rel, names: map[string]bool{}, members: map[string]map[string]bool{}, embeds: map[string][]string{}}
		m.byPath[rel] = pk
		m.byName[name] = append(m.byName[name], pk)
		if last := path.Base(rel); rel != "" && last != name {
			m.byName[last] = append(m.byName[last], pk)
		}
	}
	member := func(typ, n string) {
		if pk.members[typ] == nil {
			pk.members[typ] = map[string]bool{}
		}
		pk.members[typ][n] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				pk.names[d.Name.Name] = true
				continue
			}
			member(typeName(d.Recv.List[0].Type), d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						pk.names[n.Name] = true
					}
				case *ast.TypeSpec:
					t := s.Name.Name
					pk.names[t] = true
					if len(m.types[t]) == 0 || m.types[t][len(m.types[t])-1] != pk {
						m.types[t] = append(m.types[t], pk)
					}
					m.addMembers(pk, t, s.Type, member)
				}
			}
		}
	}
}

// addMembers records the fields of a struct and the methods of an
// interface, and what either embeds.
func (m *module) addMembers(pk *pkg, t string, x ast.Expr, member func(typ, n string)) {
	var list []*ast.Field
	switch x := x.(type) {
	case *ast.StructType:
		list = x.Fields.List
	case *ast.InterfaceType:
		list = x.Methods.List
	default:
		return
	}
	for _, f := range list {
		if len(f.Names) == 0 {
			pk.embeds[t] = append(pk.embeds[t], typeName(f.Type))
			continue
		}
		for _, n := range f.Names {
			member(t, n.Name)
		}
	}
}

// typeName is the name of the type x names, without pointer, package or
// type arguments.
func typeName(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// hasMember reports whether type t of pk has member n, itself or through
// what it embeds (looked up by name, in pk and then anywhere).
func (m *module) hasMember(pk *pkg, t, n string, depth int) bool {
	if pk.members[t][n] {
		return true
	}
	if depth > 4 {
		return false
	}
	for _, e := range pk.embeds[t] {
		if e == n {
			return true
		}
		if _, ok := pk.members[e]; ok || pk.names[e] {
			if m.hasMember(pk, e, n, depth+1) {
				return true
			}
			continue
		}
		for _, o := range m.types[e] {
			if m.hasMember(o, e, n, depth+1) {
				return true
			}
		}
		if len(m.types[e]) == 0 {
			return true // a type of another module: its members are not known here
		}
	}
	return false
}

// A Finding is a quoted identifier the module does not declare or a
// quoted path the repository does not hold.
type Finding struct {
	File  string
	Line  int
	Quote string
	Why   string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: `%s`: %s", f.File, f.Line, f.Quote, f.Why)
}

var (
	span = regexp.MustCompile("`([^`]+)`")
	// A Go name as docs quote it: an optional package path, then dotted
	// identifiers, then perhaps a call's arguments.
	quoted = regexp.MustCompile(`^[*&]?((?:[a-z][a-z0-9_]*/)*)([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(\(.*\))?$`)
	// The last element of a file name, not a member.
	fileExt = regexp.MustCompile(`^(go|md|mod|sum|json|jsonl|yaml|yml|sh|db|txt|pprof|js|mjs|ts|toml|html|csv|golden|log|out|lock|tar|gz|zip|exe|test)$`)
)

// checkFile checks every Go name quoted outside fenced code blocks in the
// Markdown file at p (named name in findings).
func (m *module) checkFile(p, name string) ([]Finding, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Finding
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		for _, s := range span.FindAllStringSubmatch(line, -1) {
			if why := m.check(s[1]); why != "" {
				out = append(out, Finding{File: name, Line: n, Quote: s[1], Why: why})
			}
		}
	}
	return out, sc.Err()
}

// repoPath is a path as docs quote it: slash-separated names, perhaps
// after "./", perhaps ending in "/" or "/..." (a folder) or a line
// reference ":12" / ":12-30".
var repoPath = regexp.MustCompile(`^(?:\./)?([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*?)(/|/\.\.\.)?(?::[0-9]+(?:-[0-9]+)?)?$`)

// checkPath returns why quote, a path of the repository, names nothing
// there; "" if it exists or is not a repository path. A quote is taken for
// one when it holds a "/" and its first element is a file or folder at the
// module's root that .gitignore does not mark as output, so
// `application/json`, paths relative to another file, other trees' paths
// and `.tools/profiles/` are left alone.
func (m *module) checkPath(quote string) string {
	mt := repoPath.FindStringSubmatch(quote)
	if mt == nil || !strings.Contains(mt[1]+mt[2], "/") {
		return ""
	}
	p := mt[1]
	first, _, _ := strings.Cut(p, "/")
	if first == "." || first == ".." || m.ignored[first] {
		return ""
	}
	if _, err := os.Stat(filepath.Join(m.root, first)); err != nil {
		return ""
	}
	info, err := os.Stat(filepath.Join(m.root, filepath.FromSlash(p)))
	switch {
	case err != nil:
		return "no such file or folder in the repository"
	case mt[2] != "" && !info.IsDir():
		return "is a file, not a folder"
	}
	return ""
}

// rootIgnored reads the folders the root .gitignore anchors ("/bin/"):
// what is built or downloaded there is not in the repository.
func rootIgnored(root string) map[string]bool {
	out := map[string]bool{}
	b, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if name, ok := strings.CutPrefix(l, "/"); ok && !strings.Contains(strings.TrimSuffix(name, "/"), "/") {
			out[strings.TrimSuffix(name, "/")] = true
		}
	}
	return out
}

// check returns why quote names nothing in the module, or "" if it does
// or is not a Go name or path of the module at all (a flag, a JSON field,
// a name of another module).
func (m *module) check(quote string) string {
	quote = strings.TrimSpace(quote)
	if mt := quoted.FindStringSubmatch(quote); mt == nil || fileExt.MatchString(mt[2][strings.LastIndex(mt[2], ".")+1:]) {
		return m.checkPath(quote)
	}
	mt := quoted.FindStringSubmatch(quote)
	if mt == nil {
		return ""
	}
	dir, parts := strings.TrimSuffix(mt[1], "/"), strings.Split(mt[2], ".")
	if fileExt.MatchString(parts[len(parts)-1]) || !ast.IsExported(parts[1]) {
		// A file name, or a key such as the stream metadata's
		// tablejournal.shards: the guides quote exported names only.
		return ""
	}
	var pkgs []*pkg
	if dir != "" {
		p := m.byPath[dir+"/"+parts[0]]
		if p == nil {
			return ""
		}
		pkgs = []*pkg{p}
	} else {
		pkgs = m.byName[parts[0]]
	}
	if len(pkgs) > 0 {
		return m.checkIn(pkgs, parts[0], parts[1:])
	}
	if ts := m.types[parts[0]]; len(ts) > 0 && len(parts) == 2 {
		for _, p := range ts {
			if m.hasMember(p, parts[0], parts[1], 0) {
				return ""
			}
		}
		return fmt.Sprintf("type %s has no field or method %s", parts[0], parts[1])
	}
	return ""
}

// checkIn checks rest (Name, Name.Member) in any of pkgs, the packages
// named pkgName.
func (m *module) checkIn(pkgs []*pkg, pkgName string, rest []string) string {
	var why string
	for _, p := range pkgs {
		switch {
		case !p.names[rest[0]]:
			why = fmt.Sprintf("package %s declares no %s", pkgName, rest[0])
		case len(rest) == 1 || len(rest) > 2:
			return ""
		case m.types[rest[0]] == nil || !containsPkg(m.types[rest[0]], p):
			return "" // a function, variable or constant: its fields are not checked
		case m.hasMember(p, rest[0], rest[1], 0):
			return ""
		default:
			why = fmt.Sprintf("%s.%s has no field or method %s", pkgName, rest[0], rest[1])
		}
	}
	return why
}

func containsPkg(ps []*pkg, p *pkg) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// Check checks the Markdown files given (paths relative to root) against the
// Go module at root and returns what they quote that it does not declare.
func Check(root string, files []string) ([]Finding, error) {
	m, err := loadModule(root)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, f := range files {
		fs, err := m.checkFile(filepath.Join(root, f), filepath.ToSlash(f))
		if err != nil {
			return nil, fmt.Errorf("docscheck: %w", err)
		}
		out = append(out, fs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}
