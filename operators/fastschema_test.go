package operators

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type fastNested struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
}

type fastAll struct {
	S   string            `json:"s"`
	I   int               `json:"i"`
	U   uint8             `json:"u,omitempty"`
	F   float64           `json:"f,omitempty"`
	B   bool              `json:"b,omitempty"`
	P   *string           `json:"p,omitempty"`
	L   []int             `json:"l,omitempty"`
	A   [2]int            `json:"a,omitempty"`
	M   map[string]string `json:"m,omitempty"`
	N   fastNested        `json:"n,omitzero"`
	NP  *fastNested       `json:"np,omitempty"`
	Any any               `json:"any,omitempty"`
}

type fastEmpty struct{}

// fastSchemas are schemas the fast validator must handle, with a valid
// argument object for each.
func fastSchemas() map[string]struct {
	s     *jsonschema.Schema
	valid string
} {
	ptr := jsonschema.Ptr[float64]
	enumed := mustSchema[fastAll]()
	enumed.Properties["s"].Enum = []any{"x", "y", "é"}
	enumed.Properties["i"].Minimum = ptr(-3)
	enumed.Properties["i"].Maximum = ptr(10)
	enumed.Properties["f"].ExclusiveMinimum = ptr(0)
	enumed.Properties["f"].ExclusiveMaximum = ptr(1)
	enumed.Properties["u"].MultipleOf = ptr(3)
	c := any(true)
	enumed.Properties["b"].Const = &c
	strs := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"code":  {Type: "string", Pattern: `^[A-Z]{2}\d$`},
			"short": {Type: "string", MinLength: jsonschema.Ptr(2), MaxLength: jsonschema.Ptr(3)},
			"n":     {Types: []string{"integer", "null"}, Enum: []any{1, 2.5, nil, int64(7)}},
			"list":  {Type: "array", Items: &jsonschema.Schema{Type: "number"}, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(2)},
			"free":  {},
			"never": {Not: &jsonschema.Schema{}},
		},
		Required:             []string{"code", "other"},
		AdditionalProperties: &jsonschema.Schema{Type: "integer"},
	}
	out := map[string]struct {
		s     *jsonschema.Schema
		valid string
	}{
		"all":    {mustSchema[fastAll](), `{"s":"x","i":1,"n":{"name":"a","tags":["t"]},"np":null,"l":[1,2],"a":[1,2],"m":{"k":"v"},"any":[{}]}`},
		"enumed": {enumed, `{"s":"é","i":-3,"f":0.5,"u":9,"b":true}`},
		"strs":   {strs, `{"code":"AB1","other":3,"short":"héé","n":7,"list":[1.5]}`},
		"empty":  {mustSchema[fastEmpty](), `{}`},
		"query":  {QuerySchema("q"), `{"query":"x"}`},
		"nil":    {nil, `{"anything":[1,{"b":null}]}`},
	}
	for _, tool := range append(Builtins(BuiltinConfig{Tools: NewProvider(ProviderConfig{}), Operators: NewOperatorRegistry(nil)}),
		echoForFast()) {
		out["tool "+tool.Spec().Name] = struct {
			s     *jsonschema.Schema
			valid string
		}{tool.Spec().InputSchema, ""}
	}
	for _, op := range []Operator{queryRewriter{}, coder{}} {
		out["op "+op.Spec().Name] = struct {
			s     *jsonschema.Schema
			valid string
		}{op.Spec().InputSchema, `{"query":"q"}`}
	}
	return out
}

func echoForFast() Tool {
	type in struct {
		Text  string `json:"text"`
		Times int    `json:"times,omitempty"`
	}
	return NewTool("echo", "", func(_ context.Context, _ Call, _ in) (Result, error) { return Result{}, nil })
}

var fastInputs = []string{
	`{}`, ` {} `, "\t{\n}\r\n", `{"s":"x"}`, `{"s":"x","i":1}`, `{"s":"x","i":1.0}`, `{"s":"x","i":1.5}`,
	`{"s":"x","i":1e2}`, `{"s":"x","i":-0}`, `{"s":"x","i":-4}`, `{"s":"x","i":11}`, `{"s":"x","i":10}`,
	`{"s":"x","i":1e400}`, `{"s":"x","i":123456789012345678901234567890}`, `{"s":"x","i":9007199254740993}`,
	`{"s":"x","i":01}`, `{"s":"x","i":+1}`, `{"s":"x","i":.5}`, `{"s":"x","i":1.}`, `{"s":"x","i":1e}`, `{"s":"x","i":-}`,
	`{"s":"x","i":1,"f":0}`, `{"s":"x","i":1,"f":1}`, `{"s":"x","i":1,"f":0.999}`, `{"s":"x","i":1,"u":6}`, `{"s":"x","i":1,"u":7}`,
	`{"s":"x","i":1,"u":256}`, `{"s":"x","i":1,"b":false}`, `{"s":"x","i":1,"b":true}`, `{"s":"x","i":1,"b":tru}`,
	`{"s":"x","i":1,"b":truee}`, `{"s":"z","i":1}`, `{"s":"\u0078","i":1}`, `{"\u0073":"x","i":1}`, `{"s":"x","i":1,"s":"y"}`,
	`{"s":"x","i":1,"s":3}`, `{"s":3,"s":"x","i":1}`, `{"s":"x","i":1,"extra":1}`, `{"s":"x","i":1,"p":null}`,
	`{"s":"x","i":1,"p":"a"}`, `{"s":"x","i":1,"p":1}`, `{"s":"x","i":1,"np":{}}`, `{"s":"x","i":1,"np":{"name":"a"}}`,
	`{"s":"x","i":1,"np":{"name":"a","x":1}}`, `{"s":"x","i":1,"n":{"name":"a","tags":null}}`, `{"s":"x","i":1,"a":[1]}`,
	`{"s":"x","i":1,"a":[1,2,3]}`, `{"s":"x","i":1,"l":[1,"2"]}`, `{"s":"x","i":1,"l":[1,]}`, `{"s":"x","i":1,"l":[,1]}`,
	`{"s":"x","i":1,"m":{"a":1}}`, `{"s":"x","i":1,"m":{"a":"1","b":"2"}}`, `{"s":"x","i":1,"any":{"deep":[[[[]]]]}}`,
	`{"s":"x","i":1,}`, `{"s":"x" "i":1}`, `{"s":"x","i":1}x`, `{"s":"x","i":1}{}`, `{"s":"x\n","i":1}`, "{\"s\":\"x\x01\",\"i\":1}",
	"{\"s\":\"\xff\",\"i\":1}", `{"s":"\x","i":1}`, `{"s":"\u12","i":1}`, `{"s":"x`, `{"s"`, `{`, `[]`, `[{}]`, `"x"`, `1`, `null`,
	`{"code":"AB1","other":3}`, `{"code":"ab1","other":3}`, `{"code":"AB1"}`, `{"code":"AB1","other":3.5}`,
	`{"code":"AB1","other":3,"short":"a"}`, `{"code":"AB1","other":3,"short":"abcd"}`, `{"code":"AB1","other":3,"short":"\u00e9\u00e9"}`,
	`{"code":"AB1","other":3,"n":null}`, `{"code":"AB1","other":3,"n":2.5}`, `{"code":"AB1","other":3,"n":2}`,
	`{"code":"AB1","other":3,"n":7.0}`, `{"code":"AB1","other":3,"list":[]}`, `{"code":"AB1","other":3,"list":[1,2,3]}`,
	`{"code":"AB1","other":3,"free":{"x":[null,true,false,1.5e-3,"s"]}}`, `{"code":"AB1","other":3,"never":1}`,
	`{"query":""}`, `{"query":"q"}`, `{"query":"q","context":"c"}`, `{"query":"q","language":"go"}`, `{"query":1}`,
	`{"expression":"1+2"}`, `{"timezone":"UTC"}`, `{"text":"a","times":2}`, `{"text":"a","colour":"red"}`,
	`{"s":"é","i":-3,"f":0.5,"u":9,"b":true}`, `{"a":1,"b":2}`,
}

// TestFastValidatorNeverAcceptsWhatJSONSchemaRejects is the contract of
// the fast path: whenever it says valid, the reflective validator agrees.
func TestFastValidatorNeverAcceptsWhatJSONSchemaRejects(t *testing.T) {
	for name, tc := range fastSchemas() {
		v, err := newValidator(tc.s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v != nil && v.fast == nil {
			t.Errorf("%s: the schema did not compile for the fast path", name)
			continue
		}
		inputs := fastInputs
		if tc.valid != "" {
			inputs = append([]string{tc.valid}, inputs...)
		}
		for _, in := range inputs {
			checkFastAgrees(t, name, v, []byte(in))
		}
		if tc.valid != "" {
			fast := anyObject
			if v != nil {
				fast = v.fast
			}
			if !fastValid(fast, []byte(tc.valid)) {
				t.Errorf("%s: valid arguments %s missed the fast path", name, tc.valid)
			}
		}
	}
}

func checkFastAgrees(t *testing.T, name string, v *validator, args []byte) {
	t.Helper()
	fast := anyObject
	if v != nil {
		fast = v.fast
	}
	if !fastValid(fast, args) {
		return
	}
	if err := v.validateSlow("tool", args); err != nil {
		t.Errorf("%s: fast path accepted %q, jsonschema-go says %v", name, args, err)
	}
	if v == nil {
		return
	}
	// encoding/json must decode it too.
	var x any
	if err := json.Unmarshal(args, &x); err != nil {
		t.Errorf("%s: fast path accepted %q, which does not decode: %v", name, args, err)
	}
}

func TestFastValidatorDeclinesUnhandledSchemas(t *testing.T) {
	for name, s := range map[string]*jsonschema.Schema{
		"anyOf":       {AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "object"}}},
		"ref":         {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Ref: "#/$defs/x"}}, Defs: map[string]*jsonschema.Schema{"x": {}}},
		"uniqueItems": {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "array", UniqueItems: true}}},
		"not schema":  {Type: "object", Not: &jsonschema.Schema{Type: "string"}},
		"old draft":   {Schema: "http://json-schema.org/draft-04/schema#", Type: "object"},
		"minProps":    {Type: "object", MinProperties: jsonschema.Ptr(1)},
		"object enum": {Type: "object", Enum: []any{map[string]any{}}},
	} {
		if n := compileFast(s); n != nil {
			t.Errorf("%s compiled", name)
		}
	}
}

// An invalid call still gets jsonschema-go's words.
func TestFastValidatorKeepsErrorMessages(t *testing.T) {
	v, err := newValidator(mustSchema[fastAll]())
	if err != nil {
		t.Fatal(err)
	}
	err = v.validate("t", json.RawMessage(`{"s":"x","i":1,"zz":2}`))
	if !errors.Is(err, ErrInvalidArguments) || err.Error() != `operators: invalid arguments for t: unexpected additional properties ["zz"]; expected `+v.hint {
		t.Errorf("error = %v", err)
	}
}

func FuzzFastValidator(f *testing.F) {
	for _, in := range fastInputs {
		f.Add([]byte(in))
	}
	var vs []*validator
	for name, tc := range fastSchemas() {
		v, err := newValidator(tc.s)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		vs = append(vs, v)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, v := range vs {
			checkFastAgrees(t, "", v, args)
		}
	})
}
