package operators

import (
	"math"
	"reflect"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// A fast validator checks raw JSON arguments against a schema precompiled
// from the keywords tool schemas actually use (type, properties, required,
// additionalProperties, items, enum, const, number and string bounds,
// pattern), in one pass over the bytes and without allocating.
//
// It only ever answers "valid" when the arguments are well-formed JSON that
// encoding/json decodes and github.com/google/jsonschema-go accepts; on
// anything else (an invalid call, a keyword or an input form it does not
// handle, such as an escaped key) it answers "not sure" and the caller falls
// back to the reflective validator, which decides and words the error. So
// the fast path changes speed, never outcomes or messages.
//
// A schema using any keyword outside that set compiles to nothing, and
// every call takes the reflective path.

// JSON types, as bits.
const (
	jtNull uint8 = 1 << iota
	jtBoolean
	jtObject
	jtArray
	jtNumber
	jtInteger
	jtString
)

var jsonTypeBits = map[string]uint8{
	"null": jtNull, "boolean": jtBoolean, "object": jtObject, "array": jtArray,
	"number": jtNumber, "integer": jtInteger, "string": jtString,
}

// fastNode is one compiled (sub)schema. The zero fastNode accepts any value.
type fastNode struct {
	never bool  // the false schema: nothing validates
	types uint8 // allowed types; 0 means any

	consts []*fastConsts // enum and const: the value must be in each

	// numbers
	multipleOf, minimum, maximum, exclMin, exclMax float64
	numChecks                                      uint8 // numMultipleOf | numMinimum | ...

	// strings; a negative length means no bound
	minLength, maxLength int
	pattern              *regexp.Regexp

	// arrays; a negative count means no bound
	items              *fastNode // nil: any item
	minItems, maxItems int

	// objects
	props        []fastProp // required ones first, so their index fits the mask
	index        map[string]int
	required     uint64    // bit i set: props[i] is required
	additional   *fastNode // for undeclared properties; nil: anything
	noAdditional bool      // additionalProperties: false
}

const (
	numMultipleOf uint8 = 1 << iota
	numMinimum
	numMaximum
	numExclMin
	numExclMax
)

type fastProp struct {
	name     string
	node     *fastNode // nil: any value
	declared bool      // in "properties" (not only in "required")
}

// fastConsts is the set of values an enum or a const allows.
type fastConsts struct {
	null, yes, no bool
	strs          []string
	nums          []float64
}

var anyValue = &fastNode{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}

// anyObject validates what a nil *validator accepts: any JSON object.
var anyObject = &fastNode{types: jtObject, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}

// compileFast compiles the root schema s, or returns nil if s uses
// something the fast validator does not handle.
func compileFast(s *jsonschema.Schema) *fastNode {
	if s == nil {
		return anyObject
	}
	switch s.Schema { // the versions Resolved.Validate accepts
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
	default:
		return nil
	}
	n, ok := compileNode(s, 0)
	if !ok {
		return nil
	}
	return n
}

const fastMaxDepth = 64

// unhandled reports whether s sets a field other than those compileNode
// understands and those that do not affect validation when there is no
// $ref (annotations, $defs, format, unknown keywords). The check is by
// reflection over a copy, so a field a future jsonschema-go adds makes the
// schema unsupported until it is handled here.
func unhandled(s *jsonschema.Schema) bool {
	c := *s
	c.Schema, c.Comment, c.Defs, c.Definitions = "", "", nil, nil
	c.Title, c.Description, c.Default, c.Deprecated, c.ReadOnly, c.WriteOnly, c.Examples = "", "", nil, false, false, false, nil
	c.Format, c.Extra, c.PropertyOrder = "", nil, nil
	c.Type, c.Types, c.Enum, c.Const = "", nil, nil, nil
	c.MultipleOf, c.Minimum, c.Maximum, c.ExclusiveMinimum, c.ExclusiveMaximum = nil, nil, nil, nil, nil
	c.MinLength, c.MaxLength, c.Pattern = nil, nil, ""
	c.Items, c.MinItems, c.MaxItems = nil, nil, nil
	c.Required, c.Properties, c.AdditionalProperties = nil, nil, nil
	c.Not = nil
	return !reflect.ValueOf(c).IsZero()
}

func compileNode(s *jsonschema.Schema, depth int) (*fastNode, bool) {
	if s == nil || depth > fastMaxDepth || unhandled(s) {
		return nil, false
	}
	if depth > 0 && s.Schema != "" {
		return nil, false
	}
	n := &fastNode{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	if s.Not != nil {
		// Only {"not": {}}, which is how "false" decodes: it fails everything.
		if !reflect.ValueOf(*s.Not).IsZero() {
			return nil, false
		}
		n.never = true
		return n, true
	}

	switch {
	case s.Type != "":
		b, ok := jsonTypeBits[s.Type]
		if !ok {
			return nil, false
		}
		n.types = b
	case s.Types != nil:
		if len(s.Types) == 0 {
			return nil, false
		}
		for _, t := range s.Types {
			b, ok := jsonTypeBits[t]
			if !ok {
				return nil, false
			}
			n.types |= b
		}
	}
	if n.types&jtNumber != 0 { // "number" subsumes integers
		n.types |= jtInteger
	}

	if s.Enum != nil {
		c, ok := compileConsts(s.Enum)
		if !ok {
			return nil, false
		}
		n.consts = append(n.consts, c)
	}
	if s.Const != nil {
		c, ok := compileConsts([]any{*s.Const})
		if !ok {
			return nil, false
		}
		n.consts = append(n.consts, c)
	}

	for _, b := range []struct {
		p   *float64
		dst *float64
		bit uint8
	}{
		{s.MultipleOf, &n.multipleOf, numMultipleOf},
		{s.Minimum, &n.minimum, numMinimum},
		{s.Maximum, &n.maximum, numMaximum},
		{s.ExclusiveMinimum, &n.exclMin, numExclMin},
		{s.ExclusiveMaximum, &n.exclMax, numExclMax},
	} {
		if b.p == nil {
			continue
		}
		if math.IsNaN(*b.p) || math.IsInf(*b.p, 0) {
			return nil, false
		}
		*b.dst = *b.p
		n.numChecks |= b.bit
	}

	if s.MinLength != nil {
		n.minLength = max(*s.MinLength, 0)
	}
	if s.MaxLength != nil {
		if *s.MaxLength < 0 {
			return nil, false
		}
		n.maxLength = *s.MaxLength
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern) // as jsonschema-go compiles it
		if err != nil {
			return nil, false
		}
		n.pattern = re
	}

	if s.Items != nil {
		item, ok := compileNode(s.Items, depth+1)
		if !ok {
			return nil, false
		}
		n.items = item
	}
	if s.MinItems != nil {
		n.minItems = max(*s.MinItems, 0)
	}
	if s.MaxItems != nil {
		if *s.MaxItems < 0 {
			return nil, false
		}
		n.maxItems = *s.MaxItems
	}

	if len(s.Required) > 64 {
		return nil, false
	}
	at := map[string]int{}
	for _, name := range s.Required {
		if _, dup := at[name]; !dup {
			at[name] = len(n.props)
			n.required |= 1 << len(n.props)
			n.props = append(n.props, fastProp{name: name})
		}
	}
	for name, ps := range s.Properties {
		pn, ok := compileNode(ps, depth+1)
		if !ok {
			return nil, false
		}
		if i, ok := at[name]; ok {
			n.props[i].node, n.props[i].declared = pn, true
			continue
		}
		at[name] = len(n.props)
		n.props = append(n.props, fastProp{name: name, node: pn, declared: true})
	}
	if len(n.props) > 8 {
		n.index = at
	}
	if ap := s.AdditionalProperties; ap != nil {
		an, ok := compileNode(ap, depth+1)
		if !ok {
			return nil, false
		}
		if an.never {
			n.noAdditional = true
		} else {
			n.additional = an
		}
	}
	return n, true
}

// compileConsts compiles enum values; only JSON scalars are handled.
// Values compare as jsonschema-go's equalValue does: numbers by value,
// strings and booleans by kind and value, nil equals null.
func compileConsts(vals []any) (*fastConsts, bool) {
	if len(vals) == 0 {
		return nil, false
	}
	c := &fastConsts{}
	for _, e := range vals {
		if e == nil {
			c.null = true
			continue
		}
		v := reflect.ValueOf(e)
		switch {
		case v.Kind() == reflect.String:
			c.strs = append(c.strs, v.String())
		case v.Kind() == reflect.Bool:
			if v.Bool() {
				c.yes = true
			} else {
				c.no = true
			}
		case v.CanInt():
			i := v.Int()
			if i < -1<<53 || i > 1<<53 { // not exact as a float64
				return nil, false
			}
			c.nums = append(c.nums, float64(i))
		case v.CanUint():
			u := v.Uint()
			if u > 1<<53 {
				return nil, false
			}
			c.nums = append(c.nums, float64(u))
		case v.CanFloat():
			f := v.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, false
			}
			c.nums = append(c.nums, f)
		default:
			return nil, false
		}
	}
	return c, true
}

// fastScan walks raw JSON. Every method returns false both for invalid
// input and for input it will not judge; the caller then falls back.
type fastScan struct {
	b     []byte
	i     int
	depth int
}

// fastValid reports whether args is certainly a JSON object valid against n.
func fastValid(n *fastNode, args []byte) bool {
	if n == nil {
		return false
	}
	s := fastScan{b: args}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	if !s.value(n) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

func (s *fastScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *fastScan) value(n *fastNode) bool {
	if n.never {
		return false
	}
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(n)
	case c == '[':
		return s.array(n)
	case c == '"':
		str, plain, ok := s.str()
		return ok && n.checkString(str, plain)
	case c == 't':
		return s.lit("true") && n.allows(jtBoolean) && n.constBool(true)
	case c == 'f':
		return s.lit("false") && n.allows(jtBoolean) && n.constBool(false)
	case c == 'n':
		return s.lit("null") && n.allows(jtNull) && n.constNull()
	case c == '-' || c >= '0' && c <= '9':
		f, ok := s.num()
		return ok && n.checkNumber(f)
	}
	return false
}

func (n *fastNode) allows(t uint8) bool { return n.types == 0 || n.types&t != 0 }

func (s *fastScan) lit(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

// str scans a string at s.i and returns its raw content; plain means the
// content has no escapes, so it is also the decoded value.
func (s *fastScan) str() (raw []byte, plain, ok bool) {
	s.i++ // '"'
	start, ascii := s.i, true
	plain = true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(raw) { // encoding/json would replace bytes
				return nil, false, false
			}
			return raw, plain, true
		case c == '\\':
			plain = false
			if s.i+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 {
					return nil, false, false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, false
					}
				}
				s.i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			s.i++
		}
	}
	return nil, false, false
}

// num scans a number at s.i, strictly by the JSON grammar, and parses it
// as encoding/json does into an any (a float64; out of range fails).
func (s *fastScan) num() (float64, bool) {
	b, start := s.b, s.i
	i := s.i
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return 0, false
	}
	if i == len(b) || b[i] != '.' && b[i] != 'e' && b[i] != 'E' {
		// A plain integer of at most 15 digits is exact in a float64:
		// skip ParseFloat.
		neg := b[start] == '-'
		ds := b[start:i]
		if neg {
			ds = ds[1:]
		}
		if len(ds) <= 15 {
			s.i = i
			var u uint64
			for _, c := range ds {
				u = u*10 + uint64(c-'0')
			}
			if f := float64(u); !neg {
				return f, true
			}
			return -float64(u), true
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	s.i = i
	f, err := strconv.ParseFloat(string(b[start:i]), 64)
	return f, err == nil
}

// open enters the container at s.i, which n must allow as type t, one
// level deeper, and reports whether close ends it at once.
func (s *fastScan) open(n *fastNode, t uint8, close byte) (empty, ok bool) {
	if !n.allows(t) || n.consts != nil {
		return false, false
	}
	if s.depth++; s.depth > fastMaxDepth {
		return false, false
	}
	s.i++ // the opening bracket
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		return true, true
	}
	return false, true
}

// after reads what follows a container's member: a comma, before another
// (more), or close.
func (s *fastScan) after(close byte) (more, ok bool) {
	s.ws()
	if s.i >= len(s.b) {
		return false, false
	}
	c := s.b[s.i]
	s.i++
	switch c {
	case ',':
		return true, true
	case close:
		return false, true
	}
	return false, false
}

func (s *fastScan) object(n *fastNode) bool {
	empty, ok := s.open(n, jtObject, '}')
	if !ok {
		return false
	}
	var seen uint64
	for more := !empty; more; {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		key, plain, ok := s.str()
		if !ok || !plain { // an escaped key is left to the slow path
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		child := n.additional
		if i := n.lookup(key); i >= 0 {
			if i < 64 {
				seen |= 1 << i
			}
			if p := n.props[i]; p.declared {
				child = p.node
			} else if n.noAdditional {
				return false
			}
		} else if n.noAdditional {
			return false
		}
		if child == nil {
			child = anyValue
		}
		if !s.value(child) {
			return false
		}
		if more, ok = s.after('}'); !ok {
			return false
		}
	}
	s.depth--
	return seen&n.required == n.required
}

func (n *fastNode) lookup(key []byte) int {
	if n.index != nil {
		if i, ok := n.index[string(key)]; ok {
			return i
		}
		return -1
	}
	for i := range n.props {
		if n.props[i].name == string(key) {
			return i
		}
	}
	return -1
}

func (s *fastScan) array(n *fastNode) bool {
	empty, ok := s.open(n, jtArray, ']')
	if !ok {
		return false
	}
	item := n.items
	if item == nil {
		item = anyValue
	}
	count := 0
	for more := !empty; more; {
		if !s.value(item) {
			return false
		}
		count++
		if more, ok = s.after(']'); !ok {
			return false
		}
	}
	s.depth--
	return count >= n.minItems && (n.maxItems < 0 || count <= n.maxItems)
}

func (n *fastNode) checkString(raw []byte, plain bool) bool {
	if !n.allows(jtString) {
		return false
	}
	if n.consts == nil && n.minLength < 0 && n.maxLength < 0 && n.pattern == nil {
		return true
	}
	if !plain { // the checks below need the decoded value
		return false
	}
	for _, c := range n.consts {
		found := false
		for _, v := range c.strs {
			if v == string(raw) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCount(raw)
		if l < n.minLength || n.maxLength >= 0 && l > n.maxLength {
			return false
		}
	}
	return n.pattern == nil || n.pattern.Match(raw)
}

func (n *fastNode) checkNumber(f float64) bool {
	t := jtNumber
	if _, frac := math.Modf(f); frac == 0 {
		t = jtInteger // jsonschema-go calls a whole float64 an integer
	}
	if !n.allows(t) {
		return false
	}
	for _, c := range n.consts {
		found := false
		for _, v := range c.nums {
			if v == f {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.numChecks == 0 {
		return true
	}
	if n.numChecks&numMultipleOf != 0 {
		if _, frac := math.Modf(f / n.multipleOf); frac != 0 {
			return false
		}
	}
	return (n.numChecks&numMinimum == 0 || f >= n.minimum) &&
		(n.numChecks&numMaximum == 0 || f <= n.maximum) &&
		(n.numChecks&numExclMin == 0 || f > n.exclMin) &&
		(n.numChecks&numExclMax == 0 || f < n.exclMax)
}

func (n *fastNode) constBool(b bool) bool {
	for _, c := range n.consts {
		if b && !c.yes || !b && !c.no {
			return false
		}
	}
	return true
}

func (n *fastNode) constNull() bool {
	for _, c := range n.consts {
		if !c.null {
			return false
		}
	}
	return true
}
