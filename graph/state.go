package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"unsafe"
)

// Number is what Sum can add.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64
}

// Field declares how one field of the state S merges updates. Fields that
// are not declared are replaced by the newest non-zero value.
//
// Declare each field once, with Append, Sum, Merge or Reduce:
//
//	g := graph.New[State](
//		graph.Append(func(s *State) *[]string { return &s.Items }),
//		graph.Sum(func(s *State) *int { return &s.Tokens }),
//	)
type Field[S any] struct {
	ptr    func(*S) any
	kind   reducerKind
	reduce func(dst, src *S)
	length func(*S) int // an append field's length
	// tail returns a pointer to an append field's elements from index
	// from on, for JSON.
	tail func(s *S, from int) any
}

type reducerKind uint8

const (
	kindReplace reducerKind = iota
	kindAppend
	kindSum
	kindMerge
	kindCustom
)

func (k reducerKind) String() string {
	return [...]string{"replace", "append", "sum", "merge", "custom"}[k]
}

// Append declares a slice field whose updates are appended. Its checkpoints
// store only what each step appended.
func Append[S, E any](field func(*S) *[]E) Field[S] {
	return Field[S]{
		ptr:  func(s *S) any { return field(s) },
		kind: kindAppend,
		reduce: func(dst, src *S) {
			p := field(dst)
			*p = append(*p, *field(src)...)
		},
		length: func(s *S) int { return len(*field(s)) },
		tail: func(s *S, from int) any {
			t := (*field(s))[from:]
			return &t
		},
	}
}

// Sum declares a numeric field whose updates are added.
func Sum[S any, N Number](field func(*S) *N) Field[S] {
	return Field[S]{
		ptr:    func(s *S) any { return field(s) },
		kind:   kindSum,
		reduce: func(dst, src *S) { *field(dst) += *field(src) },
	}
}

// Merge declares a map field whose updates are merged key by key, newer
// values winning. The merged map is a new map: states handed out earlier
// never change under their holders.
func Merge[S any, K comparable, V any](field func(*S) *map[K]V) Field[S] {
	return Field[S]{
		ptr:  func(s *S) any { return field(s) },
		kind: kindMerge,
		reduce: func(dst, src *S) {
			p := field(dst)
			m := make(map[K]V, len(*p)+len(*field(src)))
			maps.Copy(m, *p)
			maps.Copy(m, *field(src))
			*p = m
		},
	}
}

// Reduce declares a field merged by fn, called with the current value and
// a node's non-zero update.
func Reduce[S, T any](field func(*S) *T, fn func(current, update T) T) Field[S] {
	return Field[S]{
		ptr:  func(s *S) any { return field(s) },
		kind: kindCustom,
		reduce: func(dst, src *S) {
			p := field(dst)
			*p = fn(*p, *field(src))
		},
	}
}

// fieldMask is a set of state fields by index. States have at most 64
// exported fields, checked by newSchema.
type fieldMask uint64

func (m fieldMask) has(i int) bool { return m&(1<<uint(i)) != 0 }

// field is one exported field of the state struct.
type field[S any] struct {
	name   string
	index  int // in the struct, for reflect
	offset uintptr
	size   uintptr
	zero   []zeroTest // see zero.go
	zeroOK bool       // else reflect decides whether the field is zero
	copy   copyKind   // how apply and overwrite copy the field
	kind   reducerKind
	reduce func(dst, src *S) // nil for replace
	length func(*S) int      // append fields only
	tail   func(s *S, from int) any
}

// schema is what New learns about S by reflection, once; running a step
// never reflects over the type again.
type schema[S any] struct {
	fields []field[S]
	byName map[string]int
	// slices are the offsets of the slice fields, for clipSlices.
	slices []uintptr
	// replaced are the fields without a reducer, which two tasks of a
	// step must not both write.
	replaced fieldMask
}

func newSchema[S any](decls []Field[S]) (*schema[S], error) {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("graph: state type %v is not a struct", t)
	}
	sc := &schema[S]{byName: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		sc.byName[f.Name] = len(sc.fields)
		zero, ok := zeroTests(f.Type, f.Offset, t.Align())
		sc.fields = append(sc.fields, field[S]{name: f.Name, index: i, offset: f.Offset, size: f.Type.Size(),
			zero: zero, zeroOK: ok, copy: copyKindOf(f.Type)})
		if f.Type.Kind() == reflect.Slice {
			sc.slices = append(sc.slices, f.Offset)
		}
	}
	if len(sc.fields) > 64 {
		return nil, fmt.Errorf("graph: state type %v has %d exported fields; at most 64 are supported", t, len(sc.fields))
	}
	var errs []error
	for _, d := range decls {
		var probe S
		p := reflect.ValueOf(d.ptr(&probe))
		idx := -1
		sv := reflect.ValueOf(&probe).Elem()
		for j, f := range sc.fields {
			fv := sv.Field(f.index)
			if fv.Addr().Pointer() == p.Pointer() && fv.Type() == p.Type().Elem() {
				idx = j
				break
			}
		}
		if idx < 0 {
			errs = append(errs, fmt.Errorf("graph: a %s reducer's accessor does not return the address of an exported field of %v", d.kind, t))
			continue
		}
		f := &sc.fields[idx]
		if f.reduce != nil {
			errs = append(errs, fmt.Errorf("graph: field %s has two reducers (%s and %s); declare it once", f.name, f.kind, d.kind))
			continue
		}
		f.kind, f.reduce, f.length, f.tail = d.kind, d.reduce, d.length, d.tail
	}
	for i, f := range sc.fields {
		if f.kind == kindReplace {
			sc.replaced |= 1 << uint(i)
		}
	}
	return sc, errors.Join(errs...)
}

// setFields returns the fields of u that hold a non-zero value (as
// reflect.Value.IsZero defines it): the fields a node's update sets.
func (sc *schema[S]) setFields(u *S) fieldMask {
	p := unsafe.Pointer(u)
	var m fieldMask
	for i := range sc.fields {
		f := &sc.fields[i]
		if f.zeroOK && isZero(f.zero, p) {
			continue
		}
		if f.zeroOK || !reflect.ValueOf(u).Elem().Field(f.index).IsZero() {
			m |= 1 << uint(i)
		}
	}
	return m
}

// apply merges the fields in mask from u into dst through their reducers.
func (sc *schema[S]) apply(dst, u *S, mask fieldMask) {
	for i := range sc.fields {
		if !mask.has(i) {
			continue
		}
		if f := &sc.fields[i]; f.reduce != nil {
			f.reduce(dst, u)
		} else {
			f.set(unsafe.Pointer(dst), unsafe.Pointer(u))
		}
	}
}

// overwrite sets the fields in mask of dst to those of src, bypassing
// reducers.
func (sc *schema[S]) overwrite(dst, src *S, mask fieldMask) {
	for i := range sc.fields {
		if mask.has(i) {
			sc.fields[i].set(unsafe.Pointer(dst), unsafe.Pointer(src))
		}
	}
}

// copyKind is how a field's value is copied from one state to another.
// Most fields are copied by a typed assignment of their shape, which
// costs what a plain Go assignment costs; the rest go through reflect,
// whose per-call checks cost more than the copy (apply runs on every
// field every node sets).
type copyKind uint8

const (
	copyReflect copyKind = iota
	copyBytes            // no pointers: copied as bytes
	copyWord             // a pointer, map, channel or func: one pointer word
	copyString
	copySlice // a slice header; its data word is a pointer whatever the element
)

func copyKindOf(t reflect.Type) copyKind {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func:
		return copyWord
	case reflect.String:
		return copyString
	case reflect.Slice:
		return copySlice
	}
	if pointerFree(t) {
		return copyBytes
	}
	return copyReflect
}

// pointerFree reports whether values of t hold no pointer, so that
// copying their bytes needs no write barrier.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// set copies the field from the state at src to the state at dst.
func (f *field[S]) set(dst, src unsafe.Pointer) {
	d, s := unsafe.Add(dst, f.offset), unsafe.Add(src, f.offset)
	switch f.copy {
	case copyBytes:
		copy(unsafe.Slice((*byte)(d), f.size), unsafe.Slice((*byte)(s), f.size))
	case copyWord:
		*(*unsafe.Pointer)(d) = *(*unsafe.Pointer)(s)
	case copyString:
		*(*string)(d) = *(*string)(s)
	case copySlice:
		*(*[]byte)(d) = *(*[]byte)(s)
	default:
		reflect.ValueOf((*S)(dst)).Elem().Field(f.index).Set(reflect.ValueOf((*S)(src)).Elem().Field(f.index))
	}
}

// changed returns the fields of b that may differ from a's: those whose
// bytes differ. Bit-identical fields certainly hold the same value; a
// field that differs only in representation (an equal string elsewhere in
// memory) counts as changed and is merely stored again. Comparing bytes
// costs no allocation and no reflection, which matters because a copy of
// the state compared field by field is how Command.Overwrite is read.
func (sc *schema[S]) changed(a, b *S) fieldMask {
	pa, pb := unsafe.Pointer(a), unsafe.Pointer(b)
	var m fieldMask
	for i, f := range sc.fields {
		if f.size == 0 {
			continue
		}
		x := unsafe.Slice((*byte)(unsafe.Add(pa, f.offset)), f.size)
		y := unsafe.Slice((*byte)(unsafe.Add(pb, f.offset)), f.size)
		if !bytes.Equal(x, y) {
			m |= 1 << uint(i)
		}
	}
	return m
}

// clipSlices caps the capacity of s's slice fields at their length, so
// that whoever appends to this copy of a state — nodes running in
// parallel, a caller handed a state the thread cache keeps — gets a new
// array instead of writing into a shared one. It writes the slice headers
// directly, without reflection: it runs on every state a cached run hands
// out.
func (sc *schema[S]) clipSlices(s *S) {
	p := unsafe.Pointer(s)
	for _, off := range sc.slices {
		h := (*sliceHeader)(unsafe.Add(p, off))
		h.cap = h.len
	}
}

// sliceHeader is the layout of every slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// names returns the names of the fields in mask, in declaration order.
func (sc *schema[S]) names(mask fieldMask) []string {
	var out []string
	for i, f := range sc.fields {
		if mask.has(i) {
			out = append(out, f.name)
		}
	}
	return out
}

// encodeField returns the JSON of field i of s, or of its elements from
// index from on when it is an append field stored as a delta.
func (sc *schema[S]) encodeField(s *S, i, from int) ([]byte, error) {
	var e fieldEncoder[S]
	if err := e.append(sc, s, i, from); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// fieldEncoder writes fields as JSON into one buffer, reused step after
// step, with no allocation per field once warm but a delta's slice
// header.
type fieldEncoder[S any] struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// append writes the JSON of field i of s, or of its elements from index
// from on, to the buffer.
func (e *fieldEncoder[S]) append(sc *schema[S], s *S, i, from int) error {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	var v any
	if from > 0 {
		v = sc.fields[i].tail(s, from)
	} else {
		// Encode through a pointer: boxing a pointer in an interface is free.
		v = reflect.ValueOf(s).Elem().Field(sc.fields[i].index).Addr().Interface()
	}
	if err := e.enc.Encode(v); err != nil {
		return fmt.Errorf("graph: encode field %s: %w", sc.fields[i].name, err)
	}
	e.buf.Truncate(e.buf.Len() - 1) // Encode's newline
	return nil
}

// decodeField sets field i of s from data; with appendTo it appends the
// decoded elements to the field's current value instead.
func (sc *schema[S]) decodeField(s *S, i int, data []byte, appendTo bool) error {
	fv := reflect.ValueOf(s).Elem().Field(sc.fields[i].index)
	if !appendTo {
		fv.SetZero()
		if err := json.Unmarshal(data, fv.Addr().Interface()); err != nil {
			return fmt.Errorf("graph: decode field %s: %w", sc.fields[i].name, err)
		}
		return nil
	}
	tmp := reflect.New(fv.Type())
	if err := json.Unmarshal(data, tmp.Interface()); err != nil {
		return fmt.Errorf("graph: decode field %s delta: %w", sc.fields[i].name, err)
	}
	fv.Set(reflect.AppendSlice(fv, tmp.Elem()))
	return nil
}

// encodeState returns the JSON of a whole state, for Send inputs.
func encodeState[S any](s *S) (json.RawMessage, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("graph: encode state: %w", err)
	}
	return b, nil
}

func validName(name string) error {
	switch {
	case name == "":
		return errors.New("empty node name")
	case name == START || name == END:
		return fmt.Errorf("node name %q is reserved", name)
	case strings.ContainsAny(name, ":|"):
		return fmt.Errorf("node name %q contains ':' or '|', which namespaces use", name)
	}
	return nil
}
