package operators

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Calculator limits: they keep a hostile expression from using unbounded
// time or memory.
const (
	calcMaxLen       = 2000    // characters of input
	calcMaxDepth     = 64      // nesting of parentheses, calls and unary signs
	calcMaxBits      = 1 << 16 // bits in any integer result (~19,700 digits)
	calcMaxFactorial = 3000    // largest n for n!
	calcMaxBinExp    = 1 << 20 // |binary exponent| of any non-integer result
	calcPrec         = 256     // bits of big.Float mantissa
	calcDigits       = 30      // significant digits shown for exact arithmetic
	calcFloat64Dig   = 15      // significant digits after a float64 function
)

// CalcError is a calculator error at a 1-based character position.
type CalcError struct {
	Pos int
	Msg string
}

func (e *CalcError) Error() string { return fmt.Sprintf("at position %d: %s", e.Pos, e.Msg) }

// Calculate evaluates an arithmetic expression and returns its value as
// text. Integers are exact at any size up to the limits (2^100, 100!);
// other values use 256-bit floats. It parses arithmetic only and never
// evaluates code.
//
// Operators: + - * / % ^ (also × ÷ − ** and postfix !), with ^
// right-associative and binding tighter than unary minus (-2^2 = -4); %
// is the remainder, with the sign of the dividend. Functions: sqrt, log
// and ln (natural), log10, log2, exp, sin, cos, tan, asin, acos, atan (in
// radians), abs, floor, ceil, round, min, max, factorial. Constants: pi
// (π), e. Errors are [*CalcError] values naming the position.
func Calculate(expr string) (string, error) {
	if utf8.RuneCountInString(expr) > calcMaxLen {
		return "", &CalcError{Pos: 1, Msg: fmt.Sprintf("expression longer than %d characters", calcMaxLen)}
	}
	if !utf8.ValidString(expr) {
		return "", &CalcError{Pos: 1, Msg: "expression is not valid UTF-8"}
	}
	toks, err := lex(expr)
	if err != nil {
		return "", err
	}
	p := &parser{toks: toks}
	v, err := p.expr()
	if err != nil {
		return "", err
	}
	if t := p.peek(); t.kind != tkEOF {
		return "", p.errAt(t, fmt.Sprintf("unexpected %s", t))
	}
	return v.String(), nil
}

type tokKind int

const (
	tkEOF tokKind = iota
	tkNum
	tkIdent
	tkOp // + - * / % ^ ! ( ) ,
)

type token struct {
	kind tokKind
	text string // number text, identifier (lower case) or operator
	pos  int    // 1-based rune position
}

func (t token) String() string {
	switch t.kind {
	case tkEOF:
		return "end of expression"
	case tkNum:
		return "number " + t.text
	case tkIdent:
		return fmt.Sprintf("%q", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

func lex(s string) ([]token, error) {
	var toks []token
	rs := []rune(s)
	for i := 0; i < len(rs); {
		c, pos := rs[i], i+1
		switch {
		case unicode.IsSpace(c):
			i++
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == '.') {
				j++
			}
			// exponent: e or E followed by digits, optionally signed
			if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
				k := j + 1
				if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
					k++
				}
				if k < len(rs) && rs[k] >= '0' && rs[k] <= '9' {
					for k < len(rs) && rs[k] >= '0' && rs[k] <= '9' {
						k++
					}
					j = k
				}
			}
			text := string(rs[i:j])
			if strings.Count(text, ".") > 1 || text == "." {
				return nil, &CalcError{Pos: pos, Msg: fmt.Sprintf("malformed number %q", text)}
			}
			toks = append(toks, token{kind: tkNum, text: text, pos: pos})
			i = j
		case unicode.IsLetter(c) || c == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_') {
				j++
			}
			toks = append(toks, token{kind: tkIdent, text: strings.ToLower(string(rs[i:j])), pos: pos})
			i = j
		default:
			op := ""
			switch c {
			case '+', '-', '/', '%', '^', '!', '(', ')', ',':
				op = string(c)
			case '*':
				op = "*"
				if i+1 < len(rs) && rs[i+1] == '*' {
					op = "^"
					i++
				}
			case '×', '·':
				op = "*"
			case '÷':
				op = "/"
			case '−', '–':
				op = "-"
			default:
				return nil, &CalcError{Pos: pos, Msg: fmt.Sprintf("unexpected character %q", c)}
			}
			toks = append(toks, token{kind: tkOp, text: op, pos: pos})
			i++
		}
	}
	return append(toks, token{kind: tkEOF, pos: len(rs) + 1}), nil
}

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) errAt(t token, msg string) error { return &CalcError{Pos: t.pos, Msg: msg} }

func (p *parser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tkOp && t.text == s
}

func (p *parser) enter(t token) error {
	p.depth++
	if p.depth > calcMaxDepth {
		return p.errAt(t, fmt.Sprintf("expression nested deeper than %d levels", calcMaxDepth))
	}
	return nil
}

// expr := term (('+'|'-') term)*
func (p *parser) expr() (num, error) { return p.leftAssoc(p.term, "+", "-") }

// term := unary (('*'|'/'|'%') unary)*
func (p *parser) term() (num, error) { return p.leftAssoc(p.unary, "*", "/", "%") }

// leftAssoc parses operand ((ops[0]|ops[1]|...) operand)*, applying the
// operators left to right.
func (p *parser) leftAssoc(operand func() (num, error), ops ...string) (num, error) {
	v, err := operand()
	if err != nil {
		return num{}, err
	}
	for slices.ContainsFunc(ops, p.isOp) {
		op := p.next()
		w, err := operand()
		if err != nil {
			return num{}, err
		}
		if v, err = arith(op, v, w); err != nil {
			return num{}, err
		}
	}
	return v, nil
}

// unary := ('-'|'+') unary | power
func (p *parser) unary() (num, error) {
	if p.isOp("-") || p.isOp("+") {
		op := p.next()
		if err := p.enter(op); err != nil {
			return num{}, err
		}
		defer func() { p.depth-- }()
		v, err := p.unary()
		if err != nil || op.text == "+" {
			return v, err
		}
		return v.neg(), nil
	}
	return p.power()
}

// power := postfix ('^' unary)?   (right-associative through unary)
func (p *parser) power() (num, error) {
	v, err := p.postfix()
	if err != nil {
		return num{}, err
	}
	if !p.isOp("^") {
		return v, nil
	}
	op := p.next()
	if err := p.enter(op); err != nil {
		return num{}, err
	}
	defer func() { p.depth-- }()
	w, err := p.unary()
	if err != nil {
		return num{}, err
	}
	return pow(op, v, w)
}

// postfix := primary '!'*
func (p *parser) postfix() (num, error) {
	v, err := p.primary()
	if err != nil {
		return num{}, err
	}
	for p.isOp("!") {
		op := p.next()
		if v, err = factorial(op, v); err != nil {
			return num{}, err
		}
	}
	return v, nil
}

// primary := number | constant | ident '(' expr (',' expr)* ')' | '(' expr ')'
func (p *parser) primary() (num, error) {
	t := p.next()
	switch {
	case t.kind == tkNum:
		return parseNum(t)
	case t.kind == tkOp && t.text == "(":
		if err := p.enter(t); err != nil {
			return num{}, err
		}
		defer func() { p.depth-- }()
		v, err := p.expr()
		if err != nil {
			return num{}, err
		}
		if !p.isOp(")") {
			return num{}, p.errAt(p.peek(), fmt.Sprintf("expected \")\" to close \"(\" at position %d, found %s", t.pos, p.peek()))
		}
		p.next()
		return v, nil
	case t.kind == tkIdent:
		if !p.isOp("(") {
			if c, ok := constant(t.text); ok {
				return c, nil
			}
			if _, ok := functions[t.text]; ok {
				return num{}, p.errAt(t, fmt.Sprintf("function %s needs arguments in parentheses", t.text))
			}
			return num{}, p.errAt(t, fmt.Sprintf("unknown identifier %q (constants: pi, e)", t.text))
		}
		return p.call(t)
	case t.kind == tkEOF:
		return num{}, p.errAt(t, "unexpected end of expression")
	default:
		return num{}, p.errAt(t, fmt.Sprintf("unexpected %s", t))
	}
}

func (p *parser) call(name token) (num, error) {
	fn, ok := functions[name.text]
	if !ok {
		return num{}, p.errAt(name, fmt.Sprintf("unknown function %q", name.text))
	}
	open := p.next() // "("
	if err := p.enter(open); err != nil {
		return num{}, err
	}
	defer func() { p.depth-- }()
	var args []num
	if !p.isOp(")") {
		for {
			v, err := p.expr()
			if err != nil {
				return num{}, err
			}
			args = append(args, v)
			if !p.isOp(",") {
				break
			}
			p.next()
		}
	}
	if !p.isOp(")") {
		return num{}, p.errAt(p.peek(), fmt.Sprintf("expected \")\" to close %s( at position %d, found %s", name.text, open.pos, p.peek()))
	}
	p.next()
	if fn.arity >= 0 && len(args) != fn.arity {
		return num{}, p.errAt(name, fmt.Sprintf("%s takes %d argument%s, got %d", name.text, fn.arity, plural(fn.arity), len(args)))
	}
	if len(args) == 0 {
		return num{}, p.errAt(name, fmt.Sprintf("%s needs at least one argument", name.text))
	}
	v, err := fn.eval(args)
	if err != nil {
		msg := err.Error()
		if ce, ok := errors.AsType[*CalcError](err); ok {
			msg = ce.Msg
		}
		return num{}, p.errAt(name, msg)
	}
	return v, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func parseNum(t token) (num, error) {
	if !strings.ContainsAny(t.text, ".eE") {
		i, ok := new(big.Int).SetString(t.text, 10)
		if !ok {
			return num{}, &CalcError{Pos: t.pos, Msg: fmt.Sprintf("malformed number %q", t.text)}
		}
		return checkInt(i, t)
	}
	f, _, err := big.ParseFloat(t.text, 10, calcPrec, big.ToNearestEven)
	if err != nil {
		return num{}, &CalcError{Pos: t.pos, Msg: fmt.Sprintf("malformed number %q", t.text)}
	}
	return checkFloat(num{f: f, digits: calcDigits}, t)
}

func constant(name string) (num, bool) {
	switch name {
	case "pi", "π":
		f, _, _ := big.ParseFloat("3.14159265358979323846264338327950288419716939937510582097494459", 10, calcPrec, big.ToNearestEven)
		return num{f: f, digits: calcDigits}, true
	case "e":
		f, _, _ := big.ParseFloat("2.71828182845904523536028747135266249775724709369995957496696763", 10, calcPrec, big.ToNearestEven)
		return num{f: f, digits: calcDigits}, true
	}
	return num{}, false
}

// float64Result wraps a float64 computed by package math, rejecting NaN
// and infinities.
func float64Result(x float64, what string) (num, error) {
	if math.IsNaN(x) {
		return num{}, fmt.Errorf("%s is undefined", what)
	}
	if math.IsInf(x, 0) {
		return num{}, fmt.Errorf("%s is too large", what)
	}
	return num{f: new(big.Float).SetPrec(calcPrec).SetFloat64(x), digits: calcFloat64Dig}, nil
}
