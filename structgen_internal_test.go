package structgen

import "testing"

func TestUnsignZero(t *testing.T) {
	for in, want := range map[string]string{
		`-0`:                         `0`,
		`{"a":-0,"b":[-0,-0.5,-01]}`: `{"a":0,"b":[0,-0.5,-01]}`,
		`[-0e1,-0.0,-0E2,-10,-0]`:    `[-0e1,-0.0,-0E2,-10,0]`,
		`{"-0":"-0 \"-0","k":-0}`:    `{"-0":"-0 \"-0","k":0}`,
		`{"s":"\\","n":-0}`:          `{"s":"\\","n":0}`,
		`{"a":1}`:                    `{"a":1}`,
	} {
		if got := string(unsignZero([]byte(in))); got != want {
			t.Errorf("unsignZero(%s) = %s, want %s", in, got, want)
		}
	}
}
