package chunks

import "testing"

// Take's slices have exactly the length asked for, as capacity too, and
// never share memory, whatever the size and what the chunk has left
// (sizes past a chunk's included).
func TestTake(t *testing.T) {
	var c Chunks[int]
	var got [][]int
	for i, k := range []int{200, 1, 129, 512, 1025, 3000, 1, 16, 17, 1024, 0, 7} {
		s := c.Take(k)
		if len(s) != k || cap(s) != k {
			t.Fatalf("Take(%d): len %d cap %d", k, len(s), cap(s))
		}
		for j := range s {
			if s[j] != 0 {
				t.Fatalf("Take(%d)[%d] = %d, not zeroed", k, j, s[j])
			}
			s[j] = i + 1
		}
		got = append(got, append(s, -1)) // (an append past the capacity moves it)
	}
	for i, s := range got {
		for j, x := range s[:len(s)-1] {
			if x != i+1 {
				t.Fatalf("slice %d entry %d overwritten: %d", i, j, x)
			}
		}
	}
}
