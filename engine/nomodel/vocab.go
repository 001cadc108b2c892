package nomodel

import (
	"strings"
	"sync"
	"unicode"

	"github.com/structgen/structgen/mask"
)

// The built-in vocabulary. Its layout is fixed, so instances are
// reproducible across versions that keep it:
//
//	ids 0..255         one token per byte value (token i is the byte i)
//	ids 256..256+3W-1  for each of the W words: "word", " word", "Word"
//	id  256+3W         "<|end|>", the end-of-generation token (special)
const (
	// ByteTokens is the number of single-byte tokens (ids 0..255).
	ByteTokens = 256
	// EOGName is the text of the end-of-generation token.
	EOGName = "<|end|>"
)

// Token weights: a step picks among the allowed tokens with probability
// proportional to these. The classes are chosen for readable, varied test
// data: free text is mostly words with some letters and digits, punctuation
// and non-ASCII characters are rare but reachable (every byte is a token,
// so every sentence of every grammar can be produced), control bytes are
// rarer still.
const (
	weightWord        = 1.0   // a word token ("order", " order") where it reads as a word:
	weightGluedWord   = 0.03  // ... a bare word right after a letter or digit, a spaced one elsewhere, is rare
	weightCapWord     = 0.2   // a capitalised word ("Order"), now and then
	weightDigit       = 0.05  // an ASCII digit: the ten together weigh about as much as
	weightPunct       = 0.1   // ... two punctuation marks (',' '}' end a number), so numbers stay short
	weightLetter      = 0.02  // an ASCII letter: rare in text (words win) and as an exponent ('e', 'E')
	weightControl     = 0.002 // 0x00-0x1F and 0x7F
	weightUTF8Lead    = 0.05  // a byte that starts a multi-byte UTF-8 character (there are 50)
	weightUTF8Cont    = 1.0   // a continuation byte (allowed only mid-character)
	weightInvalidUTF8 = 0.001 // 0xC0, 0xC1, 0xF5-0xFF: never valid UTF-8
	weightEOG         = 0.1   // the end-of-generation token, when the grammar can end (as a punctuation mark)
)

// words are common English words; with their capitalised and space-led
// forms they make free strings read like (nonsense) text.
var words = strings.Fields(`
	a about account active address after again air all also amount and answer
	any apple area around as at back bad bag base be before best big bird black
	blue board boat body book both box bread bright brown but by call can car
	card care case cat change check city class clean clear close cloud code cold
	color come cool copy cost could country cup cut dark data date day deep desk
	door down draw dream drive each early east easy edge end even event every
	eye face fact fall far fast field file fill find fine fire first fish five
	flat floor flow fly food for form four free fresh friend from front full
	game garden gift give glass go gold good great green group grow hand happy
	hard have head hear heart heavy help here high hill hold home hope horse
	hot hour house idea in item into it just keep key kind king lake land large
	last late leaf left less letter level light line list little live long look
	low made main make many map mark may meet milk mind moon more morning most
	move much music name near new next nice night north note now number of off
	old on one open orange order other out over page paid paper park part pass
	path pay pen people pick piece pink place plan plant point price print
	quick quiet rain read ready red rest rich right river road rock room round
	rule run safe sale salt sand save say sea second see sell send set shape
	ship shop short show side sign silver simple sing small snow soft some song
	soon sound south space speed spring square star start state step still stone
	store story street strong sun sure sweet table tall tea test text that the
	then these thing three time today top town tree two under up use user
	value very view wall warm watch water wave way west what wheel white wide
	wild will wind window winter with wood word work world year yellow yes you
	young zero
`)

var (
	vocabOnce sync.Once
	vocab     *mask.Vocab
	// weights[0] applies after a letter or digit, weights[1] elsewhere
	// (after a quote, a space, punctuation, or at the start): they differ
	// for the word tokens only.
	weights [2][]float64
	eogID   int32
)

// Vocab returns the built-in vocabulary of no-model mode (see the package
// documentation). It is built once and shared; it is immutable.
func Vocab() *mask.Vocab {
	vocabOnce.Do(buildVocab)
	return vocab
}

// EOG returns the id of the end-of-generation token of Vocab.
func EOG() int32 {
	vocabOnce.Do(buildVocab)
	return eogID
}

// Weight returns the sampling weight of token id of Vocab after a letter or
// digit (afterWord) or elsewhere; 0 for an id out of range.
func Weight(id int32, afterWord bool) float64 {
	vocabOnce.Do(buildVocab)
	w := weights[1]
	if afterWord {
		w = weights[0]
	}
	if id < 0 || int(id) >= len(w) {
		return 0
	}
	return w[id]
}

func buildVocab() {
	var toks [][]byte
	for b := 0; b < ByteTokens; b++ {
		toks = append(toks, []byte{byte(b)})
		weights[0] = append(weights[0], byteWeight(byte(b)))
		weights[1] = append(weights[1], byteWeight(byte(b)))
	}
	for _, w := range words {
		cap := string(unicode.ToUpper(rune(w[0]))) + w[1:]
		toks = append(toks, []byte(w), []byte(" "+w), []byte(cap))
		weights[0] = append(weights[0], weightGluedWord, weightWord, weightCapWord*weightGluedWord)
		weights[1] = append(weights[1], weightWord, weightGluedWord, weightCapWord)
	}
	eogID = int32(len(toks))
	toks = append(toks, []byte(EOGName))
	weights[0] = append(weights[0], weightEOG)
	weights[1] = append(weights[1], weightEOG)
	v, err := mask.NewVocab(toks, []int32{eogID})
	if err != nil {
		// The vocabulary is a constant of this package; NewVocab cannot
		// reject it unless the words list is broken (tested).
		panic("nomodel: built-in vocabulary: " + err.Error())
	}
	vocab = v
}

func byteWeight(b byte) float64 {
	switch {
	case b < 0x20 || b == 0x7f:
		return weightControl
	case b < 0x80:
		switch r := rune(b); {
		case unicode.IsDigit(r):
			return weightDigit
		case unicode.IsLetter(r):
			return weightLetter
		}
		return weightPunct
	case b < 0xC0:
		return weightUTF8Cont
	case b == 0xC0 || b == 0xC1 || b >= 0xF5:
		return weightInvalidUTF8
	default:
		return weightUTF8Lead
	}
}
