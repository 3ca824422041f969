package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks a yaml.Node tree, collecting every error it finds.
type decoder struct {
	path string // file name for errors
	dir  string // directory that relative schema paths are resolved against
	errs []*Error
	// warns are settings that are allowed but weaken security; Parse
	// returns them in Config.Warnings for the caller to log.
	warns []*Error
}

func newDecoder(path string) *decoder {
	dir := "."
	if path != "" {
		dir = filepath.Dir(path)
	}
	return &decoder{path: path, dir: dir}
}

// errorf records an error at line for field.
func (d *decoder) errorf(line int, field, format string, args ...any) {
	d.errs = append(d.errs, &Error{Path: d.path, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// warnf records a warning at line for field.
func (d *decoder) warnf(line int, field, format string, args ...any) {
	d.warns = append(d.warns, &Error{Path: d.path, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// err returns all recorded errors, sorted by line and joined, or nil.
func (d *decoder) err() error { return joinSorted(d.errs) }

// yamlLine matches the position prefix of the yaml package's syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses data and returns the root node of its single document, or
// nil after recording why there is none.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf(0, "", "the file is empty; it must declare at least one stream")
		} else {
			d.syntaxError(err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntaxError(err)
		return nil
	default:
		// A second document would be silently ignored; refuse instead, so
		// that no stream the user wrote is left unprotected by a check.
		d.errorf(next.Line, "", "the file holds more than one YAML document (a second \"---\"); put everything in one document")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		d.errorf(0, "", "the file is empty; it must declare at least one stream")
		return nil
	}
	root := doc.Content[0]
	if isNull(root) {
		d.errorf(0, "", "the file is empty; it must declare at least one stream")
		return nil
	}
	return root
}

// syntaxError records a YAML syntax error, taking its line out of the message.
func (d *decoder) syntaxError(err error) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if line, convErr := strconv.Atoi(m[1]); convErr == nil {
			d.errorf(line, "", "invalid YAML: %s", m[2])
			return
		}
	}
	d.errorf(0, "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// maxAliasDepth bounds alias chains. yaml.v3 does not build alias-to-alias
// cycles, but the bound keeps resolve total whatever the tree looks like.
const maxAliasDepth = 64

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxAliasDepth; i++ {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or a YAML null (~, null, or nothing).
func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names the kind of a node for "must be X, got Y" messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "string " + strconv.Quote(n.Value)
		case "!!null":
			return "null"
		case "!!bool":
			return "boolean " + n.Value
		}
		return n.Value
	}
	return "an unsupported YAML node"
}

// join appends a key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// index appends a list index to a field path.
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// mapping is a YAML mapping checked against its known keys, with merge keys
// ("<<: *anchor") expanded.
type mapping struct {
	path   string
	line   int                   // line of the mapping, for "missing field" errors
	values map[string]*yaml.Node // key -> value, nulls included
}

// has reports whether key is present with a non-null value. A null value
// counts as absent, so "brokers:" with nothing after it means no brokers.
func (m *mapping) has(key string) bool {
	v, ok := m.values[key]
	return ok && !isNull(v)
}

// value returns the value node of key, or nil when absent or null.
func (m *mapping) value(key string) *yaml.Node {
	if !m.has(key) {
		return nil
	}
	return m.values[key]
}

// mappingOf checks that n is a mapping whose keys are all in known, records
// an error for every unknown or repeated key, and returns it. misplaced maps
// keys that belong to a nested section to that section's name, for a more
// helpful message. It returns nil (after recording an error) when n is not a
// mapping.
func (d *decoder) mappingOf(n *yaml.Node, path string, known []string, misplaced map[string]string) *mapping {
	r := resolve(n)
	if r == nil || r.Kind != yaml.MappingNode {
		field, line := path, 0
		if n != nil {
			line = n.Line
		}
		d.errorf(line, field, "must be a mapping (key: value), got %s", describe(n))
		return nil
	}
	m := &mapping{path: path, line: r.Line, values: make(map[string]*yaml.Node)}
	d.collect(m, r, known, misplaced, map[*yaml.Node]bool{})
	return m
}

// collect adds the entries of the mapping node n to m. Explicit keys are
// added first and win over merged ones; merge sources are expanded in order,
// each at most once (visited), which also stops merge cycles and keeps the
// work linear in the size of the file.
func (d *decoder) collect(m *mapping, n *yaml.Node, known []string, misplaced map[string]string, visited map[*yaml.Node]bool) {
	if visited[n] {
		return
	}
	visited[n] = true
	seen := make(map[string]int) // key -> line, to catch repeated keys in this node
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.errorf(n.Content[i].Line, m.path, "keys must be plain names, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key := k.Value
		if first, dup := seen[key]; dup {
			d.errorf(k.Line, join(m.path, key), "repeated key (first at line %d); each key may appear once", first)
			continue
		}
		seen[key] = k.Line
		if !contains(known, key) {
			msg := fmt.Sprintf("unknown field %q", key)
			if section, ok := misplaced[key]; ok {
				msg += fmt.Sprintf(" (it belongs under %q)", section)
			} else {
				msg += didYouMean(key, known)
			}
			d.errorf(k.Line, m.path, "%s", msg)
			continue
		}
		if _, set := m.values[key]; set {
			continue // set explicitly or by an earlier merge source, which win
		}
		m.values[key] = v
	}
	for _, src := range merges {
		d.merge(m, src, known, misplaced, visited)
	}
}

// merge expands the value of a "<<" key: a mapping or a list of mappings.
func (d *decoder) merge(m *mapping, src *yaml.Node, known []string, misplaced map[string]string, visited map[*yaml.Node]bool) {
	r := resolve(src)
	switch {
	case r != nil && r.Kind == yaml.MappingNode:
		d.collect(m, r, known, misplaced, visited)
	case r != nil && r.Kind == yaml.SequenceNode:
		for _, item := range r.Content {
			if ri := resolve(item); ri != nil && ri.Kind == yaml.MappingNode {
				d.collect(m, ri, known, misplaced, visited)
			} else {
				d.errorf(item.Line, m.path, "\"<<\" merges mappings only, got %s", describe(item))
			}
		}
	default:
		line := 0
		if src != nil {
			line = src.Line
		}
		d.errorf(line, m.path, "\"<<\" merges mappings only, got %s", describe(src))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// require records a "missing" error for each key that m lacks.
func (d *decoder) require(m *mapping, keys ...string) {
	for _, k := range keys {
		if !m.has(k) {
			d.errorf(m.line, join(m.path, k), "required field is missing")
		}
	}
}

// scalar returns the scalar node of key, or nil when the key is absent or
// (after recording an error) not a scalar.
func (d *decoder) scalar(m *mapping, key, want string) *yaml.Node {
	v := m.value(key)
	if v == nil {
		return nil
	}
	r := resolve(v)
	if r == nil || r.Kind != yaml.ScalarNode {
		d.errorf(v.Line, join(m.path, key), "must be %s, got %s", want, describe(v))
		return nil
	}
	return r
}

// str reads a string field. Any scalar is accepted as its text (name: 123 is
// the name "123"), as YAML users expect.
func (d *decoder) str(m *mapping, key string) (string, int, bool) {
	v := d.scalar(m, key, "a string")
	if v == nil {
		return "", 0, false
	}
	return v.Value, m.values[key].Line, true
}

// integer reads an integer field.
func (d *decoder) integer(m *mapping, key string) (int, int, bool) {
	v := d.scalar(m, key, "an integer")
	if v == nil {
		return 0, 0, false
	}
	line := m.values[key].Line
	var i int
	if v.ShortTag() != "!!int" || v.Decode(&i) != nil {
		d.errorf(line, join(m.path, key), "must be an integer, got %s", describe(v))
		return 0, 0, false
	}
	return i, line, true
}

// boolean reads a true/false field. Only YAML's true and false are
// accepted: yes, on and 1 are strings or numbers in YAML 1.2, and
// guessing what they mean would be worse than asking.
func (d *decoder) boolean(m *mapping, key string) (bool, bool) {
	v := d.scalar(m, key, "true or false")
	if v == nil {
		return false, false
	}
	var b bool
	if v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
		d.errorf(m.values[key].Line, join(m.path, key), "must be true or false, got %s", describe(v))
		return false, false
	}
	return b, true
}

// number reads a float field; integers are accepted. Infinities and NaN
// (.inf, .nan) are returned as such for the caller to reject with context.
func (d *decoder) number(m *mapping, key string) (float64, int, bool) {
	v := d.scalar(m, key, "a number")
	if v == nil {
		return 0, 0, false
	}
	line := m.values[key].Line
	f, ok := numberOf(v)
	if !ok {
		d.errorf(line, join(m.path, key), "must be a number, got %s", describe(v))
		return 0, 0, false
	}
	return f, line, true
}

// numberOf decodes a resolved scalar holding an int or float.
func numberOf(v *yaml.Node) (float64, bool) {
	if v == nil || v.Kind != yaml.ScalarNode {
		return 0, false
	}
	if t := v.ShortTag(); t != "!!int" && t != "!!float" {
		return 0, false
	}
	var f float64
	if err := v.Decode(&f); err != nil {
		return 0, false
	}
	return f, true
}

// duration reads a Go duration ("1h", "90s", "1h30m").
func (d *decoder) duration(m *mapping, key string) (time.Duration, int, bool) {
	v := d.scalar(m, key, "a duration")
	if v == nil {
		return 0, 0, false
	}
	line := m.values[key].Line
	dur, err := time.ParseDuration(v.Value)
	if err != nil {
		hint := "use e.g. 1h, 90s"
		if strings.HasSuffix(strings.TrimSpace(v.Value), "d") {
			hint = "there is no day unit: use e.g. 24h"
		}
		d.errorf(line, join(m.path, key), "%q is not a duration (%s)", v.Value, hint)
		return 0, 0, false
	}
	return dur, line, true
}

// list returns the items of a list field, or nil when absent or (after
// recording an error) not a list.
func (d *decoder) list(m *mapping, key string) ([]*yaml.Node, int, bool) {
	v := m.value(key)
	if v == nil {
		return nil, 0, false
	}
	r := resolve(v)
	if r == nil || r.Kind != yaml.SequenceNode {
		d.errorf(v.Line, join(m.path, key), "must be a list, got %s", describe(v))
		return nil, 0, false
	}
	return r.Content, v.Line, true
}

// finite reports whether f is neither infinite nor NaN.
func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// fmtFloat prints a float the way a user would have written it.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// intOf decodes a resolved scalar holding an integer.
func intOf(v *yaml.Node) (int, bool) {
	if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		return 0, false
	}
	var i int
	if v.Decode(&i) != nil {
		return 0, false
	}
	return i, true
}

// fmtInts prints a list of integers as YAML would: [30, 400, 2].
func fmtInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
