#include "instruction_notes.hpp"

#include <map>
#include <vector>

namespace xcuda
{
    namespace
    {
        std::vector<std::string> parts(const std::string& opcode)
        {
            std::vector<std::string> out;
            std::string current;
            for (char c : opcode)
            {
                if (c == '.')
                {
                    out.push_back(current);
                    current.clear();
                }
                else
                {
                    current += c;
                }
            }
            out.push_back(current);
            return out;
        }

        const std::map<std::string, std::string>& ptx_opcodes()
        {
            static const std::map<std::string, std::string> notes = {
                {"abs", "absolute value"},
                {"activemask", "the mask of the warp's threads that are active now"},
                {"add", "addition"},
                {"addc", "addition with the carry of an earlier add.cc"},
                {"and", "bitwise AND (logical AND on predicates)"},
                {"atom", "atomic read-modify-write of memory; returns the old value"},
                {"bar", "barrier: waits until the threads of the block arrive (__syncthreads)"},
                {"barrier", "barrier: waits until the threads of the block arrive (__syncthreads)"},
                {"bfe", "extracts a bit field"},
                {"bfi", "inserts a bit field"},
                {"bfind", "position of the most significant non-sign bit"},
                {"bra", "branch: jumps to a label (with a guard @%p, only where the predicate holds)"},
                {"brev", "reverses the order of the bits"},
                {"brx", "indirect branch through a table of labels"},
                {"call", "calls a function (a __device__ function that was not inlined, or printf's vprintf)"},
                {"clz", "counts leading zero bits"},
                {"cnot", "C's logical not: 1 when the operand is 0, else 0"},
                {"copysign", "the first operand's sign on the second's magnitude"},
                {"cos", "cosine (approximate)"},
                {"cp", "copy; cp.async copies global to shared memory without passing through registers"},
                {"cvt", "converts between types (rounding as the modifier says)"},
                {"cvta", "converts an address between a state space and the generic address space"},
                {"div", "division"},
                {"elect", "elects one thread of the warp"},
                {"ex2", "2 to the power of the operand (approximate)"},
                {"exit", "ends the thread"},
                {"fence", "orders this thread's memory accesses (a memory fence)"},
                {"fma", "fused multiply-add: a * b + c with one rounding"},
                {"isspacep", "whether a generic address points into the given state space"},
                {"ld", "load from memory into a register"},
                {"ldu", "load of a value that is the same for every thread of the warp"},
                {"lg2", "base-2 logarithm (approximate)"},
                {"lop3", "any logic function of three operands, chosen by an 8-bit table"},
                {"mad", "multiply-add: a * b + c"},
                {"madc", "multiply-add with carry in"},
                {"match", "finds the threads of the warp that hold the same value"},
                {"max", "maximum"},
                {"mbarrier", "an asynchronous barrier object in shared memory"},
                {"membar", "memory barrier: orders this thread's memory accesses (__threadfence)"},
                {"min", "minimum"},
                {"mma", "matrix multiply-accumulate on the tensor cores, by the whole warp"},
                {"mov", "copies a value (or a special register such as %tid.x) into a register"},
                {"mul", "multiplication"},
                {"mul24", "24-bit integer multiplication"},
                {"nanosleep", "suspends the thread for about the given nanoseconds"},
                {"neg", "negation"},
                {"not", "bitwise NOT (logical NOT on predicates)"},
                {"or", "bitwise OR (logical OR on predicates)"},
                {"popc", "counts the bits that are set"},
                {"prefetch", "brings a line of memory into a cache level ahead of its use"},
                {"prmt", "permutes bytes from two registers"},
                {"rcp", "reciprocal, 1 / x"},
                {"red", "atomic reduction to memory (an atom whose result is not needed)"},
                {"redux", "reduction across the warp's threads"},
                {"rem", "remainder of an integer division"},
                {"ret", "returns from a function"},
                {"rsqrt", "reciprocal square root, 1 / sqrt(x) (approximate)"},
                {"sad", "sum of absolute differences"},
                {"selp", "selects one of two values by a predicate (a ? b : c)"},
                {"set", "compares and writes the result as a number"},
                {"setp", "compares and sets a predicate register"},
                {"shf", "funnel shift of two 32-bit registers"},
                {"shfl", "exchanges registers between the threads of a warp (__shfl_sync)"},
                {"shl", "shift left"},
                {"shr", "shift right"},
                {"sin", "sine (approximate)"},
                {"slct", "selects one of two values by the sign of a third"},
                {"sqrt", "square root"},
                {"st", "store from a register to memory"},
                {"sub", "subtraction"},
                {"subc", "subtraction with borrow"},
                {"suld", "load from a surface"},
                {"sust", "store to a surface"},
                {"tanh", "hyperbolic tangent (approximate)"},
                {"testp", "tests a floating-point property (finite, NaN, ...)"},
                {"tex", "texture fetch"},
                {"trap", "aborts the kernel with an error"},
                {"vote", "votes across the warp: any, all, or a ballot of a predicate"},
                {"wmma", "warp-level matrix multiply-accumulate (CUDA's wmma API)"},
                {"xor", "bitwise exclusive OR"},
            };
            return notes;
        }

        const std::map<std::string, std::string>& ptx_modifiers()
        {
            static const std::map<std::string, std::string> notes = {
                {"global", "global (device) memory"},
                {"shared", "shared memory of the block"},
                {"local", "the thread's local memory (spills and stack)"},
                {"param", "a kernel or function parameter"},
                {"const", "constant memory"},
                {"generic", "a generic address (global, shared or local, decided at run time)"},
                {"to", "from the generic address space to the named one"},
                {"nc", "through the read-only, non-coherent cache (const __restrict__ data)"},
                {"volatile", "a volatile access: never cached in a register"},
                {"relaxed", "relaxed memory order"},
                {"acquire", "acquire memory order"},
                {"release", "release memory order"},
                {"acq_rel", "acquire-release memory order"},
                {"sc", "sequentially consistent memory order"},
                {"cta", "scope: the block"},
                {"gpu", "scope: the whole GPU"},
                {"sys", "scope: the GPU and the host"},
                {"ca", "cached in L1 and L2"},
                {"cg", "cached in L2 only"},
                {"cs", "streaming: likely used once"},
                {"lu", "last use"},
                {"cv", "do not cache: fetch again"},
                {"wb", "write back"},
                {"wt", "write through"},
                {"v2", "two values at once"},
                {"v4", "four values at once"},
                {"v8", "eight values at once"},
                {"wide", "the full double-width result (32 x 32 -> 64 bits)"},
                {"approx", "approximate: faster, a few ulp of error"},
                {"full", "full range, close to IEEE accuracy"},
                {"ftz", "flushes denormal values to zero"},
                {"sat", "saturates the result to its range"},
                {"rn", "rounds to nearest even"},
                {"rz", "rounds towards zero"},
                {"rm", "rounds towards minus infinity"},
                {"rp", "rounds towards plus infinity"},
                {"rni", "rounds to the nearest integer"},
                {"rzi", "rounds towards zero, to an integer"},
                {"rmi", "rounds down, to an integer"},
                {"rpi", "rounds up, to an integer"},
                {"uni", "taken by every thread of the warp alike (no divergence)"},
                {"sync", "with the warp's or block's threads in step"},
                {"aligned", "every thread of the warp executes it together"},
                {"cc", "writes the carry flag"},
                {"eq", "equal"},
                {"ne", "not equal"},
                {"lt", "less than"},
                {"le", "less or equal"},
                {"gt", "greater than"},
                {"ge", "greater or equal"},
                {"ls", "unsigned less or same"},
                {"hs", "unsigned higher or same"},
                {"equ", "equal, or unordered (NaN)"},
                {"neu", "not equal, or unordered (NaN)"},
                {"ltu", "less than, or unordered (NaN)"},
                {"leu", "less or equal, or unordered (NaN)"},
                {"gtu", "greater than, or unordered (NaN)"},
                {"geu", "greater or equal, or unordered (NaN)"},
                {"num", "both are numbers (not NaN)"},
                {"nan", "either is NaN"},
                {"f16", "a 16-bit float (half)"},
                {"f16x2", "two 16-bit floats in one register"},
                {"bf16", "a bfloat16"},
                {"bf16x2", "two bfloat16 in one register"},
                {"f32", "a 32-bit float"},
                {"f64", "a 64-bit float (double)"},
                {"s8", "a signed 8-bit integer"},
                {"s16", "a signed 16-bit integer"},
                {"s32", "a signed 32-bit integer"},
                {"s64", "a signed 64-bit integer"},
                {"u8", "an unsigned 8-bit integer"},
                {"u16", "an unsigned 16-bit integer"},
                {"u32", "an unsigned 32-bit integer"},
                {"u64", "an unsigned 64-bit integer"},
                {"b8", "8 untyped bits"},
                {"b16", "16 untyped bits"},
                {"b32", "32 untyped bits"},
                {"b64", "64 untyped bits"},
                {"b128", "128 untyped bits"},
                {"pred", "a predicate (true/false)"},
                {"inc", "increment, wrapping at the operand"},
                {"dec", "decrement, wrapping at the operand"},
                {"exch", "exchange"},
                {"cas", "compare and swap"},
                {"any", "true when the predicate holds for any thread"},
                {"all", "true when it holds for every thread"},
                {"ballot", "a mask of the threads where it holds"},
                {"up", "from the thread delta lanes below"},
                {"down", "from the thread delta lanes above"},
                {"bfly", "from the thread whose lane is XORed with the mask (butterfly)"},
                {"idx", "from the thread at the given lane"},
                {"async", "asynchronous: completes later; a wait orders it"},
            };
            return notes;
        }

        const std::map<std::string, std::string>& sass_opcodes()
        {
            static const std::map<std::string, std::string> notes = {
                {"ATOM", "atomic operation on generic memory"},
                {"ATOMG", "atomic operation on global memory"},
                {"ATOMS", "atomic operation on shared memory"},
                {"BAR", "barrier across the block (__syncthreads)"},
                {"BMOV", "moves a convergence barrier register"},
                {"BPT", "breakpoint or trap"},
                {"BRA", "branch"},
                {"BREAK", "leaves a convergence region"},
                {"BREV", "reverses the bits"},
                {"BRX", "indirect branch"},
                {"BSSY", "sets up a convergence barrier before divergent code"},
                {"BSYNC", "waits for the threads of a convergence barrier (reconverges the warp)"},
                {"CALL", "calls a function"},
                {"CCTL", "cache control"},
                {"CS2R", "reads a special register (clock, zero) into a register pair"},
                {"DADD", "64-bit float add"},
                {"DEPBAR", "waits for outstanding asynchronous copies (cp.async)"},
                {"DFMA", "64-bit float fused multiply-add"},
                {"DMMA", "64-bit float matrix multiply-accumulate (tensor cores)"},
                {"DMUL", "64-bit float multiply"},
                {"DSETP", "64-bit float compare, sets a predicate"},
                {"ELECT", "elects one thread of the warp"},
                {"ERRBAR", "error barrier"},
                {"EXIT", "ends the thread"},
                {"F2F", "converts between float widths"},
                {"F2FP", "converts and packs two floats into a pair of half-width values"},
                {"F2I", "converts a float to an integer"},
                {"FADD", "32-bit float add"},
                {"FCHK", "checks whether a float division needs the slow path"},
                {"FFMA", "32-bit float fused multiply-add: a * b + c with one rounding"},
                {"FLO", "finds the leading one bit"},
                {"FMNMX", "32-bit float minimum or maximum"},
                {"FMUL", "32-bit float multiply"},
                {"FRND", "rounds a float to an integer value"},
                {"FSEL", "selects one of two floats by a predicate"},
                {"FSET", "32-bit float compare, writes a number"},
                {"FSETP", "32-bit float compare, sets a predicate"},
                {"HADD2", "adds two pairs of half floats"},
                {"HFMA2", "fused multiply-add on two pairs of half floats (also used to load constants)"},
                {"HGMMA", "warpgroup matrix multiply-accumulate (Hopper tensor cores)"},
                {"HMMA", "half-precision matrix multiply-accumulate (tensor cores)"},
                {"HMUL2", "multiplies two pairs of half floats"},
                {"HSETP2", "compares two pairs of half floats"},
                {"I2F", "converts an integer to a float"},
                {"I2I", "converts between integer widths"},
                {"IABS", "integer absolute value"},
                {"IADD3", "adds three integers"},
                {"IDP", "integer dot product"},
                {"IMAD", "integer multiply-add (also used for moves and shifts: IMAD.MOV, IMAD.SHL)"},
                {"IMMA", "integer matrix multiply-accumulate (tensor cores)"},
                {"IMNMX", "integer minimum or maximum"},
                {"ISETP", "integer compare, sets a predicate"},
                {"LD", "load through a generic address"},
                {"LDC", "load from the constant bank (kernel parameters, __constant__ data)"},
                {"LDG", "load from global memory"},
                {"LDGDEPBAR", "marks a group of asynchronous global-to-shared copies"},
                {"LDGSTS", "asynchronous copy from global to shared memory (cp.async)"},
                {"LDL", "load from local memory (spills, stack)"},
                {"LDS", "load from shared memory"},
                {"LDSM", "loads matrix fragments from shared memory (ldmatrix)"},
                {"LEA", "computes an address: a shifted index plus a base"},
                {"LOP3", "any logic function of three operands (the LUT immediate chooses)"},
                {"MATCH", "finds the threads of the warp holding the same value"},
                {"MEMBAR", "memory barrier (__threadfence)"},
                {"MOV", "copies a register or an immediate"},
                {"MUFU", "the special function unit: reciprocal, sqrt, sin, cos, exp2, log2 (approximate)"},
                {"NANOSLEEP", "suspends the thread for a while"},
                {"NOP", "does nothing (alignment padding)"},
                {"P2R", "packs predicates into a register"},
                {"PLOP3", "logic function of three predicates"},
                {"POPC", "counts the bits set"},
                {"PRMT", "permutes bytes of two registers"},
                {"R2P", "unpacks a register into predicates"},
                {"R2UR", "moves a register into a uniform register"},
                {"RED", "atomic reduction to memory, result unused"},
                {"REDUX", "reduction across the warp"},
                {"RET", "returns from a function"},
                {"S2R", "reads a special register (thread or block index, lane, clock)"},
                {"S2UR", "reads a special register into a uniform register (same in every thread)"},
                {"SEL", "selects one of two integers by a predicate"},
                {"SHF", "funnel shift of a 64-bit value held in two registers"},
                {"SHFL", "exchanges registers between the threads of a warp"},
                {"SHL", "shift left"},
                {"SHR", "shift right"},
                {"ST", "store through a generic address"},
                {"STG", "store to global memory"},
                {"STL", "store to local memory (spills, stack)"},
                {"STS", "store to shared memory"},
                {"SYNCS", "asynchronous barrier operations (mbarrier, Hopper)"},
                {"UIADD3", "adds three uniform integers (once per warp)"},
                {"UISETP", "compares uniform integers (once per warp)"},
                {"ULDC", "loads the constant bank into a uniform register (once per warp)"},
                {"ULEA", "uniform address computation"},
                {"ULOP3", "uniform logic function of three operands"},
                {"UMOV", "moves a uniform register"},
                {"USHF", "uniform funnel shift"},
                {"UTMALDG", "tensor memory accelerator load (Hopper TMA)"},
                {"VOTE", "votes across the warp (any, all, ballot)"},
                {"WARPGROUP", "warpgroup synchronization (Hopper)"},
                {"WARPSYNC", "synchronizes the threads of a warp (__syncwarp)"},
                {"YIELD", "lets another warp run"},
            };
            return notes;
        }

        const std::map<std::string, std::string>& sass_modifiers()
        {
            static const std::map<std::string, std::string> notes = {
                {"E", "64-bit address"},
                {"WIDE", "a 64-bit result from 32-bit operands"},
                {"U32", "unsigned 32-bit"},
                {"64", "64 bits at once"},
                {"128", "128 bits at once"},
                {"CONSTANT", "the value is the same for every thread"},
                {"FTZ", "flushes denormals to zero"},
                {"SAT", "saturates"},
                {"RCP", "reciprocal"},
                {"RSQ", "reciprocal square root"},
                {"SQRT", "square root"},
                {"SIN", "sine"},
                {"COS", "cosine"},
                {"EX2", "2 to the power"},
                {"LG2", "base-2 logarithm"},
                {"SYNC", "waits for the block's threads"},
                {"MOV", "used as a move"},
                {"SHL", "used as a shift left"},
                {"HI", "the high half"},
                {"X", "with the carry of the previous instruction (64-bit arithmetic)"},
                {"STRONG", "a strong (coherent) access"},
                {"GPU", "scope: the whole GPU"},
                {"SYS", "scope: the GPU and the host"},
                {"IDX", "from the thread at the given lane"},
                {"BFLY", "butterfly exchange"},
                {"UP", "from lower lanes"},
                {"DOWN", "from higher lanes"},
            };
            return notes;
        }

        std::string compose(const std::string& opcode, const std::map<std::string, std::string>& bases,
                            const std::map<std::string, std::string>& modifiers, const char* separator, bool sass)
        {
            std::vector<std::string> words = parts(opcode);
            auto base = bases.find(words[0]);
            if (base == bases.end())
            {
                return "";
            }
            std::string note = words[0] + ": " + base->second + ".";
            bool compare = !sass && (words[0] == "setp" || words[0] == "set");
            for (std::size_t i = 1; i < words.size(); ++i)
            {
                const std::string& w = words[i];
                std::string meaning;
                if (!sass && (w == "lo" || w == "hi"))
                {
                    meaning = compare ? (w == "lo" ? "unsigned lower" : "unsigned higher")
                                      : (w == "lo" ? "the low half of the product" : "the high half of the product");
                }
                else
                {
                    auto m = modifiers.find(w);
                    if (m == modifiers.end())
                    {
                        continue;
                    }
                    meaning = m->second;
                }
                note += separator + std::string(".") + w + ": " + meaning + ".";
            }
            return note;
        }
    }

    std::string instruction_notes::ptx(const std::string& opcode)
    {
        return compose(opcode, ptx_opcodes(), ptx_modifiers(), " ", false);
    }

    std::string instruction_notes::sass(const std::string& opcode)
    {
        return compose(opcode, sass_opcodes(), sass_modifiers(), " ", true);
    }
}
