package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is MIO's module path; rule patterns are relative to it.
const module = "github.com/miohq/mio"

// rule forbids the packages under From to depend, directly or through
// other packages, on a package under Forbidden that is not under Allowed.
// A pattern names a package and everything below it ("db" is db, db/dbtest,
// db/internal/dbsqlc …); "" is the whole module. A package may always
// import its own pattern's packages (but for ""). Packages under except
// are exempt. Only non-test files count: tests may reach across
// (httpapi's tests run workers, the client's run a server).
type rule struct {
	name      string
	from      []string
	except    []string
	forbidden []string
	allowed   []string
	why       string
}

var rules = []rule{
	{
		name: "AdaptersKnowNoStorageOrTransport", from: []string{"channels"}, forbidden: []string{"db", "httpapi"},
		why: "adapters turn platform payloads into envelopes and back; storage and HTTP call them, never the reverse",
	},
	{
		name: "DBKnowsNoTransportJobOrPlatform", from: []string{"db"}, forbidden: []string{"httpapi", "workers", "channels"},
		why: "the data layer knows no transport, job or platform",
	},
	{
		name: "ClientImportsOnlyEnvelope", from: []string{"client"}, forbidden: []string{""}, allowed: []string{"envelope"},
		why: "the Go client is public API: users import it without the server",
	},
	{
		name: "EnqueuersDoNotImportWorkers", from: []string{"httpapi", "ingest", "outbox"}, forbidden: []string{"workers"},
		why: "job arguments live in package jobs; the send and ingest paths do not depend on the job implementations",
	},
	{
		name: "ConsoleBesideTheAdminAPI", from: []string{"console"}, forbidden: []string{"httpapi", "workers"},
		why: "the web console calls package admin like the admin API does; cmd mounts it on the admin listener",
	},
	{
		name: "TopIsAnAdminAPIClient", from: []string{"top"}, forbidden: []string{""},
		why: "mio top reads a running MIO over HTTP (the admin API and /metrics), like any operator's tool",
	},
	{
		name: "OnlyTheCLIImportsTop", from: []string{""}, except: []string{"cmd", "top"}, forbidden: []string{"top"},
		why: "the terminal view and its libraries stay out of the server's packages",
	},
	{
		name: "MCPServerSpeaksTheAgentAPI", from: []string{"mcpserver"}, forbidden: []string{""}, allowed: []string{"envelope", "client"},
		why: "the MCP tools run over a Backend: httpapi runs them on the services, mio mcp over the Go client",
	},
	{
		name: "EnvelopeIsALeaf", from: []string{"envelope"}, forbidden: []string{""},
		why: "every layer and the client speak the envelope types",
	},
}

// TestImportDirections fails on an import against a rule, naming the chain
// of imports that leads to it.
func TestImportDirections(t *testing.T) {
	t.Parallel()
	g := loadGraph(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range slices.Concat(r.from, r.except, r.forbidden, r.allowed) {
				if !g.exists(p) {
					t.Fatalf("pattern %q names no package of %s: update the rule", p, module)
				}
			}
			if vs := g.violations(r); len(vs) > 0 {
				var b strings.Builder
				for _, v := range vs {
					fmt.Fprintf(&b, "\n\t%s must not depend on %s: %s", rel(v[0]), rel(v[len(v)-1]), chain(v))
				}
				t.Errorf("forbidden imports (%s):%s", r.why, b.String())
			}
		})
	}
}

// graph is the non-test import graph of MIO's packages and everything
// they depend on.
type graph struct {
	imports map[string][]string
	own     []string // MIO's packages, sorted
}

// loadGraph runs go list -deps over the whole module.
func loadGraph(t *testing.T) *graph {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps",
		"-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := &graph{imports: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		g.imports[f[0]] = f[1:]
		if under(f[0], "") {
			g.own = append(g.own, f[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(g.own)
	if len(g.own) == 0 {
		t.Fatalf("go list found no package of %s", module)
	}
	return g
}

// exists reports whether pattern names at least one package.
func (g *graph) exists(pattern string) bool {
	return slices.ContainsFunc(g.own, func(p string) bool { return under(p, pattern) })
}

// violations returns, for every package under r.from and every forbidden
// package it reaches, the shortest import chain from one to the other.
func (g *graph) violations(r rule) [][]string {
	var found [][]string
	for _, p := range g.own {
		i := slices.IndexFunc(r.from, func(f string) bool { return under(p, f) })
		if i < 0 || slices.ContainsFunc(r.except, func(e string) bool { return under(p, e) }) {
			continue
		}
		self := r.from[i]
		forbidden := func(q string) bool {
			return (self == "" || !under(q, self)) &&
				slices.ContainsFunc(r.forbidden, func(f string) bool { return under(q, f) }) &&
				!slices.ContainsFunc(r.allowed, func(a string) bool { return under(q, a) })
		}
		found = append(found, g.reach(p, forbidden)...)
	}
	return found
}

// reach walks the imports of p breadth first and returns the chain to each
// package for which stop is true (not walking on from there).
func (g *graph) reach(p string, stop func(string) bool) [][]string {
	parent := map[string]string{p: ""}
	queue := []string{p}
	var chains [][]string
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, next := range g.imports[q] {
			if _, seen := parent[next]; seen {
				continue
			}
			parent[next] = q
			if stop(next) {
				var c []string
				for n := next; n != ""; n = parent[n] {
					c = append(c, n)
				}
				slices.Reverse(c)
				chains = append(chains, c)
				continue
			}
			queue = append(queue, next)
		}
	}
	return chains
}

// under reports whether the import path p is the package named by the
// module-relative pattern or below it.
func under(p, pattern string) bool {
	base := module
	if pattern != "" {
		base += "/" + pattern
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

func rel(p string) string {
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return p
}

func chain(c []string) string {
	parts := make([]string, len(c))
	for i, p := range c {
		parts[i] = rel(p)
	}
	return strings.Join(parts, " → ")
}

// TestServerLinksNoBenchmarks: the production binary links neither the
// benchmarks (their own module, cmd/mio-bench) nor what only they need —
// an in-process NATS server and the bcrypt it uses for NATS users.
func TestServerLinksNoBenchmarks(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", module+"/cmd/mio").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{module + "/cmd/mio-bench", "github.com/nats-io/nats-server/", "golang.org/x/crypto/bcrypt"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("cmd/mio links %s", dep)
			}
		}
	}
}
