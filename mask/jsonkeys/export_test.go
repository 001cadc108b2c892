package jsonkeys

// InString reports whether the output ends inside a string (tests only).
func (g *Guard) InString() bool { return g.s.st.mode == mString }

// Trials returns the number of tokens Filter has scanned one by one
// (tests only).
func (g *Guard) Trials() int { return g.trials }
