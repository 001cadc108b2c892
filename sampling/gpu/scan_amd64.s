//go:build amd64 && !purego

#include "textflag.h"

// func firstAbove(xs []float32, thr float32) int
//
// The index of the first x > thr (NaN never is), or len(xs). 16 logits per
// iteration: four CMPPS (thr < x, false for NaN) OR-ed into one MOVMSKPS
// test; SSE only, which every amd64 has.
TEXT ·firstAbove(SB), NOSPLIT, $0-40
	MOVQ xs_base+0(FP), SI
	MOVQ xs_len+8(FP), CX
	MOVSS thr+24(FP), X7
	SHUFPS $0x00, X7, X7
	XORQ AX, AX
loop16:
	MOVQ CX, DX
	SUBQ AX, DX
	CMPQ DX, $16
	JLT tail
	MOVUPS (SI)(AX*4), X0
	MOVUPS 16(SI)(AX*4), X1
	MOVUPS 32(SI)(AX*4), X2
	MOVUPS 48(SI)(AX*4), X3
	MOVAPS X7, X4
	CMPPS X0, X4, $1
	MOVAPS X7, X5
	CMPPS X1, X5, $1
	MOVAPS X7, X6
	CMPPS X2, X6, $1
	MOVAPS X7, X8
	CMPPS X3, X8, $1
	MOVAPS X4, X9
	ORPS X5, X9
	ORPS X6, X9
	ORPS X8, X9
	MOVMSKPS X9, DX
	TESTQ DX, DX
	JNZ found
	ADDQ $16, AX
	JMP loop16
found:
	MOVMSKPS X4, DX
	TESTQ DX, DX
	JNZ bit
	ADDQ $4, AX
	MOVMSKPS X5, DX
	TESTQ DX, DX
	JNZ bit
	ADDQ $4, AX
	MOVMSKPS X6, DX
	TESTQ DX, DX
	JNZ bit
	ADDQ $4, AX
	MOVMSKPS X8, DX
bit:
	BSFQ DX, DX
	ADDQ DX, AX
	MOVQ AX, ret+32(FP)
	RET
tail:
	CMPQ AX, CX
	JGE none
	MOVSS (SI)(AX*4), X0
	UCOMISS X7, X0
	JA done
	INCQ AX
	JMP tail
done:
	MOVQ AX, ret+32(FP)
	RET
none:
	MOVQ CX, ret+32(FP)
	RET
