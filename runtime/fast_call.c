/* nupp's fast Python calls of native @aot functions (runtime/fast_call.py builds and loads this).
 *
 * A Caller is one @aot function as Python calls it.  It takes the call's
 * arguments as they are when they are of the plain kinds (below) and calls
 * the library's C function through its trampoline, no LuaJIT on the way;
 * every other call (an argument of another kind or out of range, a NaN, a
 * missing or extra argument, keywords, spans sharing a byte) goes to
 * `fallback`, the call through LuaJIT's host boundary, which alone refuses
 * arguments and words the refusals (runtime/lua/boundary.lua).  So the
 * kinds here are a subset of what the boundary takes, passed on as it
 * passes them, and a test holds both paths to the same results and errors
 * (tests/test_python_api_calls.py).
 *
 *   span (a Span or WriteSpan of struct T)   a NumPy array of T's dtype, 1-d,
 *        C-contiguous, at most 2^31 - 1 elements, writable for a WriteSpan:
 *        its data pointer and length
 *   float        a Python float (or subclass: NumPy's float64) that is not a
 *                NaN, or an int of magnitude at most 2^53: rounded to binary32 (C's
 *                conversion rounds to nearest even, as nupp.math.f32.narrow)
 *   number/double  the same, as binary64
 *   int32/uint32/int64/uint64  an int (not a subclass: no bool) in the type's range
 *   boolean      True or False
 *
 * Before the call, a library with loops that run on threads is given the
 * Caller's thread setting (set_threads, on the calling thread: runtime/threads.py).
 *
 * A nonzero status from the C function is the run-time error it names:
 * `on_status(status)` raises it.  A result comes back as the boundary hands
 * it to Python: a float result's NaN as `nan` (what the boundary's narrow
 * makes of one), a double's with the bits the C function gave it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/ndarraytypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* NU_ABI: runtime/fast_call.py puts the argument union and the trampoline
   type here (nu_arg, nu_trampoline), shared with the trampolines it generates. */

enum kind { K_SPAN, K_WRITE_SPAN, K_FLOAT, K_DOUBLE, K_INT32, K_UINT32, K_INT64, K_UINT64, K_BOOLEAN, K_NIL };

static const char *const KIND_NAMES[] = {"span", "write_span", "float", "double", "int32", "uint32", "int64",
                                         "uint64", "boolean", "nil", NULL};

#define TWO_53 9007199254740992LL

typedef struct {
    enum kind kind;
    PyObject *dtype;     /* spans: the struct's dtype */
    Py_ssize_t itemsize; /* spans: its size in bytes */
    /* spans: the last other dtype object found equal to `dtype`, and its field names as they were then
       (renaming fields in place replaces the names tuple), so an equal dtype costs no comparison */
    PyObject *equal_dtype, *equal_names;
} Param;

typedef struct {
    PyObject_VAR_HEAD
    vectorcallfunc vectorcall;
    nu_trampoline trampoline;
    void *function;
    nu_set_threads_fn set_threads; /* NULL: the library runs no loop on threads */
    int32_t threads;
    int64_t thread_min;
    enum kind result;
    double nan;          /* the NaN a result NaN reaches Python as through LuaJIT */
    Py_ssize_t abi_arity;
    PyObject *fallback;
    PyObject *on_status;
    PyTypeObject *ndarray;
    Param params[1];
} Caller;

/* ---- arguments ------------------------------------------------------------------------------ */

/* The int `o` in [lo, hi] as int64 (hi up to INT64_MAX); 0 when it is not one (no error left set).
   An int exactly: a subclass (a bool, an IntEnum) is the boundary's to read. */
static int integer_in(PyObject *o, long long lo, long long hi, long long *out)
{
    if (!PyLong_CheckExact(o))
        return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (overflow != 0 || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

static int uint64_of(PyObject *o, uint64_t *out)
{
    long long small;
    if (integer_in(o, 0, INT64_MAX, &small)) {
        *out = (uint64_t)small;
        return 1;
    }
    if (!PyLong_CheckExact(o))
        return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(o); /* raises for a negative or wider int */
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

/* A float parameter's value as binary64: a float that is not a NaN, or an int |n| <= 2^53. */
static int real_of(PyObject *o, double *out)
{
    if (PyFloat_Check(o)) {
        double d = PyFloat_AS_DOUBLE(o);
        if (isnan(d))
            return 0;
        *out = d;
        return 1;
    }
    long long n;
    if (integer_in(o, -TWO_53, TWO_53, &n)) {
        *out = (double)n;
        return 1;
    }
    return 0;
}

static PyObject *NAMES; /* "names", interned */

/* Whether `dtype` equals span parameter p's dtype: the same object, the equal one last seen (its
   names unchanged), or one that compares equal, which becomes the one last seen. */
static int same_dtype(Param *p, PyObject *dtype)
{
    if (dtype == p->dtype)
        return 1;
    PyObject *names = PyObject_GetAttr(dtype, NAMES);
    if (names == NULL) {
        PyErr_Clear();
        return 0;
    }
    int same = dtype == p->equal_dtype && names == p->equal_names;
    if (!same) {
        same = PyObject_RichCompareBool(dtype, p->dtype, Py_EQ);
        if (same < 0)
            PyErr_Clear();
        if (same == 1) {
            Py_XSETREF(p->equal_dtype, Py_NewRef(dtype));
            Py_XSETREF(p->equal_names, Py_NewRef(names));
        }
    }
    Py_DECREF(names);
    return same == 1;
}

/* A span argument: its pointer and length into args[0..1], its bytes; 0 when not a plain array. */
static int span_of(const Caller *c, Param *p, PyObject *o, nu_arg *args, Py_ssize_t *bytes)
{
    if (!PyObject_TypeCheck(o, c->ndarray))
        return 0;
    PyArrayObject *a = (PyArrayObject *)o;
    if (!same_dtype(p, (PyObject *)PyArray_DESCR(a)))
        return 0;
    int flags = PyArray_FLAGS(a);
    if (PyArray_NDIM(a) != 1 || !(flags & NPY_ARRAY_C_CONTIGUOUS))
        return 0;
    if (p->kind == K_WRITE_SPAN && !(flags & NPY_ARRAY_WRITEABLE))
        return 0;
    npy_intp n = PyArray_DIMS(a)[0];
    if (n > INT32_MAX)
        return 0;
    args[0].p = PyArray_DATA(a);
    args[1].i32 = (int32_t)n;
    *bytes = (Py_ssize_t)n * p->itemsize;
    return 1;
}

/* Converts Python argument `o` for parameter `p` into args (one slot, two for a span). */
static int argument(const Caller *c, Param *p, PyObject *o, nu_arg *args, Py_ssize_t *bytes)
{
    long long n;
    double d;
    switch (p->kind) {
    case K_SPAN:
    case K_WRITE_SPAN:
        return span_of(c, p, o, args, bytes);
    case K_FLOAT:
        if (!real_of(o, &d))
            return 0;
        args[0].f32 = (float)d;
        return 1;
    case K_DOUBLE:
        if (!real_of(o, &d))
            return 0;
        args[0].f64 = d;
        return 1;
    case K_INT32:
        if (!integer_in(o, INT32_MIN, INT32_MAX, &n))
            return 0;
        args[0].i32 = (int32_t)n;
        return 1;
    case K_UINT32:
        if (!integer_in(o, 0, UINT32_MAX, &n))
            return 0;
        args[0].u32 = (uint32_t)n;
        return 1;
    case K_INT64:
        if (!integer_in(o, INT64_MIN, INT64_MAX, &n))
            return 0;
        args[0].i64 = (int64_t)n;
        return 1;
    case K_UINT64:
        return uint64_of(o, &args[0].u64);
    case K_BOOLEAN:
        if (o != Py_True && o != Py_False)
            return 0;
        args[0].b = o == Py_True;
        return 1;
    case K_NIL:
        break;
    }
    return 0;
}

/* Do two of the call's spans share a byte?  (The boundary decides whether that is allowed.) */
static int spans_share_a_byte(const char **starts, const Py_ssize_t *bytes, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; ++i)
        for (Py_ssize_t j = i + 1; j < count; ++j)
            if (bytes[i] > 0 && bytes[j] > 0 && starts[i] < starts[j] + bytes[j] && starts[j] < starts[i] + bytes[i])
                return 1;
    return 0;
}

/* ---- the call -------------------------------------------------------------------------------- */

static PyObject *result_of(const Caller *c, const nu_arg *r)
{
    switch (c->result) {
    case K_FLOAT:
        return PyFloat_FromDouble(isnan(r->f32) ? c->nan : (double)r->f32);
    case K_DOUBLE:
        return PyFloat_FromDouble(r->f64);
    case K_INT32:
        return PyLong_FromLong(r->i32);
    case K_UINT32:
        return PyLong_FromUnsignedLong(r->u32);
    case K_INT64:
        return PyLong_FromLongLong(r->i64);
    case K_UINT64:
        return PyLong_FromUnsignedLongLong(r->u64);
    case K_BOOLEAN:
        return PyBool_FromLong(r->b);
    default:
        Py_RETURN_NONE;
    }
}

/* Calls of at least this many span bytes let other Python threads run meanwhile (as a call through
   LuaJIT does); a smaller one keeps the GIL: handing it over costs more than such a call. */
#define RELEASE_GIL_BYTES (64 * 1024)

static PyObject *caller_call(PyObject *self, PyObject *const *given, size_t nargsf, PyObject *kwnames)
{
    Caller *c = (Caller *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), params = Py_SIZE(c);
    if (kwnames != NULL || nargs != params || c->abi_arity > 64)
        return PyObject_Vectorcall(c->fallback, given, nargsf, kwnames);
    nu_arg args[64];
    const char *starts[64];
    Py_ssize_t bytes[64], spans = 0, total = 0, slot = 0;
    for (Py_ssize_t i = 0; i < params; ++i) {
        Param *p = &c->params[i];
        Py_ssize_t span_bytes = 0;
        if (!argument(c, p, given[i], &args[slot], &span_bytes))
            return PyObject_Vectorcall(c->fallback, given, nargsf, kwnames);
        if (p->kind == K_SPAN || p->kind == K_WRITE_SPAN) {
            starts[spans] = (const char *)args[slot].p;
            bytes[spans++] = span_bytes;
            total += span_bytes;
            slot += 2;
        } else {
            slot += 1;
        }
    }
    if (spans_share_a_byte(starts, bytes, spans))
        return PyObject_Vectorcall(c->fallback, given, nargsf, kwnames);
    nu_arg result;
    memset(&result, 0, sizeof result);
    int32_t status;
    if (c->set_threads != NULL)
        c->set_threads(c->threads, c->thread_min);
    if (total >= RELEASE_GIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        status = c->trampoline(c->function, args, &result);
        Py_END_ALLOW_THREADS
    } else {
        status = c->trampoline(c->function, args, &result);
    }
    if (status != 0) {
        PyObject *raised = PyObject_CallFunction(c->on_status, "i", (int)status);
        Py_XDECREF(raised);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_SystemError, "nupp: on_status(%d) did not raise", (int)status);
        return NULL;
    }
    return result_of(c, &result);
}

/* ---- the type -------------------------------------------------------------------------------- */

static int caller_traverse(PyObject *self, visitproc visit, void *arg)
{
    Caller *c = (Caller *)self;
    Py_VISIT(c->fallback);
    Py_VISIT(c->on_status);
    Py_VISIT(c->ndarray);
    for (Py_ssize_t i = 0; i < Py_SIZE(c); ++i) {
        Py_VISIT(c->params[i].dtype);
        Py_VISIT(c->params[i].equal_dtype);
        Py_VISIT(c->params[i].equal_names);
    }
    return 0;
}

static int caller_clear(PyObject *self)
{
    Caller *c = (Caller *)self;
    Py_CLEAR(c->fallback);
    Py_CLEAR(c->on_status);
    Py_CLEAR(c->ndarray);
    for (Py_ssize_t i = 0; i < Py_SIZE(c); ++i) {
        Py_CLEAR(c->params[i].dtype);
        Py_CLEAR(c->params[i].equal_dtype);
        Py_CLEAR(c->params[i].equal_names);
    }
    return 0;
}

static void caller_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    caller_clear(self);
    PyObject_GC_Del(self);
}

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nupp_fast_call.Caller",
    .tp_doc = "An @aot function called from Python without LuaJIT on the way (runtime/fast_call.py).",
    .tp_basicsize = offsetof(Caller, params),
    .tp_itemsize = sizeof(Param),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Caller, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = caller_traverse,
    .tp_clear = caller_clear,
    .tp_dealloc = caller_dealloc,
};

static int kind_named(PyObject *name, enum kind *out)
{
    const char *text = PyUnicode_AsUTF8(name);
    if (text == NULL)
        return 0;
    for (int k = 0; KIND_NAMES[k] != NULL; ++k)
        if (strcmp(text, KIND_NAMES[k]) == 0) {
            *out = (enum kind)k;
            return 1;
        }
    PyErr_Format(PyExc_ValueError, "nupp_fast_call: no argument kind '%s'", text);
    return 0;
}

/* caller(trampoline, function, params, result, nan, fallback, on_status, ndarray, set_threads, threads,
   thread_min): params is a sequence of (kind, dtype or None, itemsize); trampoline, function and
   set_threads (0: none) are addresses. */
static PyObject *make_caller(PyObject *module, PyObject *args)
{
    (void)module;
    unsigned long long trampoline, function, set_threads;
    PyObject *params, *result_name, *fallback, *on_status, *ndarray;
    double nan;
    int threads;
    long long thread_min;
    if (!PyArg_ParseTuple(args, "KKOUdOOO!KiL", &trampoline, &function, &params, &result_name, &nan, &fallback,
                          &on_status, &PyType_Type, &ndarray, &set_threads, &threads, &thread_min))
        return NULL;
    PyObject *items = PySequence_Fast(params, "nupp_fast_call.caller: params must be a sequence");
    if (items == NULL)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    Caller *c = PyObject_GC_NewVar(Caller, &CallerType, count);
    if (c == NULL) {
        Py_DECREF(items);
        return NULL;
    }
    c->vectorcall = caller_call;
    c->trampoline = (nu_trampoline)(uintptr_t)trampoline;
    c->function = (void *)(uintptr_t)function;
    c->set_threads = (nu_set_threads_fn)(uintptr_t)set_threads;
    c->threads = (int32_t)threads;
    c->thread_min = (int64_t)thread_min;
    c->nan = nan;
    c->abi_arity = 0;
    c->fallback = Py_NewRef(fallback);
    c->on_status = Py_NewRef(on_status);
    c->ndarray = (PyTypeObject *)Py_NewRef(ndarray);
    for (Py_ssize_t i = 0; i < count; ++i)
        c->params[i].dtype = c->params[i].equal_dtype = c->params[i].equal_names = NULL;
    int ok = kind_named(result_name, &c->result);
    for (Py_ssize_t i = 0; ok && i < count; ++i) {
        PyObject *kind, *dtype;
        Py_ssize_t itemsize;
        Param *p = &c->params[i];
        ok = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, i), "UOn", &kind, &dtype, &itemsize)
             && kind_named(kind, &p->kind);
        if (ok) {
            p->dtype = Py_NewRef(dtype);
            p->itemsize = itemsize;
            c->abi_arity += (p->kind == K_SPAN || p->kind == K_WRITE_SPAN) ? 2 : 1;
        }
    }
    Py_DECREF(items);
    PyObject_GC_Track((PyObject *)c);
    if (!ok) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static PyMethodDef METHODS[] = {
    {"caller", make_caller, METH_VARARGS, "caller(trampoline, function, params, result, nan, fallback, "
                                          "on_status, ndarray, set_threads, threads, thread_min) -> a Caller"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "nupp_fast_call", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit_nupp_fast_call(void)
{
    if (PyType_Ready(&CallerType) < 0)
        return NULL;
    NAMES = PyUnicode_InternFromString("names");
    if (NAMES == NULL)
        return NULL;
    return PyModule_Create(&MODULE);
}
