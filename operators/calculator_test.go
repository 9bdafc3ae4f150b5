package operators_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/operators"
)

func TestCalculate(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"1+2*3", "7"},
		{"(1+2)*3", "9"},
		{"0.1+0.2", "0.3"},
		{"2^100", "1267650600228229401496703205376"},
		{"2^3^2", "512"},
		{"-2^2", "-4"},
		{"(-2)^2", "4"},
		{"2^-2", "0.25"},
		{"2**10", "1024"},
		{"7/2", "3.5"},
		{"8/2", "4"},
		{"1/3", "0.333333333333333333333333333333"},
		{"10 % 3", "1"},
		{"-7 % 3", "-1"},
		{"7.5 % 2", "1.5"},
		{"3 × 4 ÷ 2 − 1", "5"},
		{"--3", "3"},
		{"+5", "5"},
		{"5!", "120"},
		{"factorial(25)", "15511210043330985984000000"},
		{"sqrt(16)", "4"},
		{"sqrt(2)", "1.41421356237309504880168872421"},
		{"sqrt(10^40)", "100000000000000000000"},
		{"log(e)", "1"},
		{"ln(1)", "0"},
		{"log10(1000)", "3"},
		{"log2(1024)", "10"},
		{"log10(10^500)", "500"},
		{"exp(0)", "1"},
		{"sin(0) + cos(0)", "1"},
		{"atan(1)*4", "3.14159265358979"},
		{"asin(1)", "1.5707963267949"},
		{"abs(-2.5)", "2.5"},
		{"floor(-2.5)", "-3"},
		{"ceil(2.1)", "3"},
		{"round(2.5)", "3"},
		{"round(-2.5)", "-3"},
		{"min(3, 1.5, 2)", "1.5"},
		{"max(3, 1.5, 2)", "3"},
		{"PI", "3.14159265358979323846264338328"},
		{"1e3 + 1", "1001"},
		{".5 * 4", "2"},
		{"2^0.5", "1.41421356237309"},
		{"0.5^100000000", "0"},
		{"0.5^1000000", "1.01003405919803022470319728035e-301030"},
		{"-(2.0^1000000)", "-9.9006562292958982506979236163e+301029"},
		{"99999999999999999999 + 1", "100000000000000000000"},
	}
	for _, tc := range tests {
		got, err := operators.Calculate(tc.expr)
		if err != nil || got != tc.want {
			t.Errorf("Calculate(%q) = %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
	got, err := operators.Calculate("100!")
	if err != nil || len(got) != 158 || !strings.HasPrefix(got, "9332621544394415268169923885626670049071") {
		t.Errorf("100! = %q, %v", got, err)
	}
}

func TestCalculateErrors(t *testing.T) {
	tests := []struct {
		expr string
		pos  int
		msg  string
	}{
		{"1/0", 2, "division by zero"},
		{"5 % 0", 3, "modulo by zero"},
		{"0^-1", 2, "division by zero"},
		{"foo + 1", 1, `unknown identifier "foo"`},
		{"bar(2)", 1, `unknown function "bar"`},
		{"1 +", 4, "unexpected end of expression"},
		{"(1+2", 5, `expected ")"`},
		{"1+2)", 4, `unexpected ")"`},
		{"2 3", 3, "unexpected number 3"},
		{"2 $ 3", 3, "unexpected character '$'"},
		{"1.2.3", 1, "malformed number"},
		{"sqrt(-1)", 1, "not a real number"},
		{"log(0)", 1, "undefined"},
		{"acos(2)", 1, "between -1 and 1"},
		{"sqrt(1, 2)", 1, "sqrt takes 1 argument, got 2"},
		{"sqrt", 1, "needs arguments in parentheses"},
		{"max()", 1, "needs at least one argument"},
		{"(-8)^(1/3)", 5, "fractional power"},
		{"2^1000000", 2, "too large"},
		{"10^10^10", 3, "too large"},
		{"3001!", 5, "factorial argument too large"},
		{"(-1)!", 5, "negative"},
		{"2.5!", 4, "whole number"},
		{"exp(10^9)", 1, "too large"},
		{"tan(1e300)", 1, "too large"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), 65, "nested deeper than 64"},
		{strings.Repeat("-", 100) + "1", 65, "nested deeper than 64"},
		{strings.Repeat("1+", 1500) + "1", 1, "longer than 2000"},
		{"import os", 1, `unknown identifier "import"`},
	}
	for _, tc := range tests {
		_, err := operators.Calculate(tc.expr)
		var ce *operators.CalcError
		if !errors.As(err, &ce) {
			t.Errorf("Calculate(%.30q) error = %v, want a CalcError", tc.expr, err)
			continue
		}
		if ce.Pos != tc.pos || !strings.Contains(ce.Msg, tc.msg) {
			t.Errorf("Calculate(%.30q) = %q, want position %d and %q", tc.expr, err, tc.pos, tc.msg)
		}
	}
}

func FuzzCalculator(f *testing.F) {
	for _, s := range []string{"1+2*3", "2^100", "100!", "sqrt(2)/0", "((1)", "-2^-2^-2", "1e308*1e308",
		"max(1,2,3)%7", "log10(10^500)", "9^9^9", "0.000001^1000000", "exp(-1e9)", "π×2÷3−1", "round(-0.5)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		start := time.Now()
		v, err := operators.Calculate(expr)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Calculate(%q) took %v", expr, d)
		}
		if err == nil && v == "" {
			t.Fatalf("Calculate(%q) returned no value and no error", expr)
		}
		if err != nil {
			if _, ok := errors.AsType[*operators.CalcError](err); !ok {
				t.Fatalf("Calculate(%q) error %v is not a CalcError", expr, err)
			}
		}
	})
}
