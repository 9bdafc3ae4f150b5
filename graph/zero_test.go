package graph

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type padded struct {
	A bool
	B int64 // 7 bytes of padding before
	C int8
}

type withBlank struct {
	A int
	_ int
	B string
}

// emptyPtrString stands for an empty string with a data pointer, which
// boxing it in an interface would lose.
type emptyPtrString struct{}

type zeroState struct {
	Bool    bool
	Int8    int8
	Uint16  uint16
	Float32 float32
	Float64 float64
	Complex complex128
	String  string
	Slice   []int
	Bytes   json.RawMessage
	Map     map[string]int
	Ptr     *int
	Chan    chan int
	Func    func()
	Any     any
	Err     error
	Padded  padded
	Blank   withBlank
	Floats  [3]float64
	Strings [20]string // long, not flat: reflect
	Ints    [20]int    // long, bytes
	Pairs   [2]struct{ K, V string }
	Time    time.Time
	Empty   struct{}
	Big     [2000]byte // past maxMaskedField: reflect
	Nested  struct {
		In struct {
			X float64
			S []string
			T string
		}
	}
	unexport int
}

// TestSetFieldsAgreesWithReflect checks the compiled zero tests against
// reflect.Value.IsZero, the definition, on values where the two could
// differ: -0.0, NaN, empty strings with a data pointer, empty non-nil
// slices, interfaces holding nil pointers, garbage in padding.
func TestSetFieldsAgreesWithReflect(t *testing.T) {
	sc, err := newSchema[zeroState](nil)
	if err != nil {
		t.Fatal(err)
	}
	negZero := math.Copysign(0, -1)
	emptyWithPtr := strings.Repeat("x", 3)[:0]
	if unsafe.StringData(emptyWithPtr) == nil {
		t.Fatal("the empty string has no data pointer")
	}
	var nilPtr *int
	one := 1
	var garbage padded
	*(*byte)(unsafe.Add(unsafe.Pointer(&garbage), 1)) = 0xff // padding after A
	var blankSet withBlank
	*(*int)(unsafe.Add(unsafe.Pointer(&blankSet), unsafe.Sizeof(0))) = 7 // the _ field
	values := map[string][]any{
		"Bool":    {true},
		"Int8":    {int8(-1)},
		"Uint16":  {uint16(256)},
		"Float32": {float32(negZero), float32(math.NaN()), float32(1)},
		"Float64": {negZero, math.NaN(), math.Inf(-1), 5e-324},
		"Complex": {complex(negZero, negZero), complex(0, 1), complex(math.NaN(), 0)},
		"String":  {emptyPtrString{}, "a"},
		"Slice":   {[]int{}, []int{0}, make([]int, 0, 4)},
		"Bytes":   {json.RawMessage{}, json.RawMessage("null")},
		"Map":     {map[string]int{}},
		"Ptr":     {&one},
		"Chan":    {make(chan int)},
		"Func":    {func() {}},
		"Any":     {nilPtr, 0, "", struct{}{}, []int(nil)},
		"Err":     {(*json.SyntaxError)(nil)},
		"Padded":  {garbage, padded{A: true}, padded{B: 1}, padded{C: -1}},
		"Blank":   {withBlank{A: 1}, withBlank{B: emptyWithPtr}, withBlank{B: "b"}, blankSet},
		"Floats":  {[3]float64{negZero, 0, negZero}, [3]float64{0, 0, math.NaN()}},
		"Strings": {[20]string{19: emptyWithPtr}, [20]string{3: "x"}},
		"Ints":    {[20]int{19: 1}},
		"Pairs":   {[2]struct{ K, V string }{{K: emptyWithPtr}}, [2]struct{ K, V string }{1: {V: "v"}}},
		"Time":    {time.Unix(0, 0), time.Time{}.In(time.UTC)},
		"Empty":   {struct{}{}},
		"Big":     {[2000]byte{1999: 1}},
		"Nested": {
			struct {
				In struct {
					X float64
					S []string
					T string
				}
			}{In: struct {
				X float64
				S []string
				T string
			}{X: negZero, T: emptyWithPtr}},
			struct {
				In struct {
					X float64
					S []string
					T string
				}
			}{In: struct {
				X float64
				S []string
				T string
			}{S: []string{}}},
		},
	}
	for i, f := range sc.fields {
		vals, ok := values[f.name]
		if !ok {
			t.Errorf("no test values for field %s", f.name)
			continue
		}
		for _, v := range append(vals, nil) {
			var s zeroState
			fv := reflect.ValueOf(&s).Elem().Field(f.index)
			switch v.(type) {
			case nil:
			case emptyPtrString:
				fv.SetString(emptyWithPtr)
			default:
				fv.Set(reflect.ValueOf(v)) // into an interface field, v's dynamic value
			}
			if f.name == "Padded" && v == nil {
				s.Padded = garbage
				s.Padded.A = false
			}
			want := !fv.IsZero()
			if got := sc.setFields(&s).has(i); got != want {
				t.Errorf("field %s = %#v: set %v, reflect says %v", f.name, fv.Interface(), got, want)
			}
		}
	}
}

func BenchmarkSetFields(b *testing.B) {
	sc, err := newSchema[zeroState](nil)
	if err != nil {
		b.Fatal(err)
	}
	u := zeroState{String: "x", Slice: []int{1}}
	for b.Loop() {
		if sc.setFields(&u) == 0 {
			b.Fatal("nothing set")
		}
	}
}

// BenchmarkSetFieldsReflect is the reflect loop setFields replaced.
func BenchmarkSetFieldsReflect(b *testing.B) {
	sc, err := newSchema[zeroState](nil)
	if err != nil {
		b.Fatal(err)
	}
	u := zeroState{String: "x", Slice: []int{1}}
	for b.Loop() {
		v := reflect.ValueOf(&u).Elem()
		var m fieldMask
		for i, f := range sc.fields {
			if !v.Field(f.index).IsZero() {
				m |= 1 << uint(i)
			}
		}
		if m == 0 {
			b.Fatal("nothing set")
		}
	}
}
