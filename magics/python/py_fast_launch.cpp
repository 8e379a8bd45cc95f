#include "py_fast_launch.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "py_common.hpp"

#include "argument_block.hpp"
#include "cuda_kernel.hpp"
#include "cuda_session.hpp"
#include "device_buffer.hpp"

namespace xcuda::python
{
    namespace
    {
        bool is_integer_kind(scalar_kind kind)
        {
            return kind == scalar_kind::i8 || kind == scalar_kind::u8 || kind == scalar_kind::i16 ||
                   kind == scalar_kind::u16 || kind == scalar_kind::i32 || kind == scalar_kind::u32 ||
                   kind == scalar_kind::i64 || kind == scalar_kind::u64;
        }

        // The value into an integer slot when it fits the kind; false (nothing stored) when not: the general
        // path then says why.
        [[gnu::always_inline]] inline bool fast_store_integer(void* slot, scalar_kind kind, long long value) noexcept
        {
            auto put = [slot](auto v) {
                std::memcpy(slot, &v, sizeof v);
                return true;
            };
            switch (kind)
            {
            case scalar_kind::i64: return put(static_cast<std::int64_t>(value));
            case scalar_kind::u64: return value >= 0 && put(static_cast<std::uint64_t>(value));
            case scalar_kind::i32: return value >= INT32_MIN && value <= INT32_MAX && put(static_cast<std::int32_t>(value));
            case scalar_kind::u32: return value >= 0 && value <= static_cast<long long>(UINT32_MAX) && put(static_cast<std::uint32_t>(value));
            case scalar_kind::i16: return value >= INT16_MIN && value <= INT16_MAX && put(static_cast<std::int16_t>(value));
            case scalar_kind::u16: return value >= 0 && value <= UINT16_MAX && put(static_cast<std::uint16_t>(value));
            case scalar_kind::i8: return value >= INT8_MIN && value <= INT8_MAX && put(static_cast<std::int8_t>(value));
            case scalar_kind::u8: return value >= 0 && value <= UINT8_MAX && put(static_cast<std::uint8_t>(value));
            default: return false;
            }
        }

        // An exact int's value without a call when it is one digit (most launch arguments: sizes, counts),
        // else PyLong_AsLongLongAndOverflow's; false past long long (the general path then says why).
        bool exact_int_value(PyObject* object, long long& value) noexcept
        {
#if PY_VERSION_HEX >= 0x030C0000
            if (PyUnstable_Long_IsCompact(reinterpret_cast<PyLongObject*>(object)))
            {
                value = static_cast<long long>(PyUnstable_Long_CompactValue(reinterpret_cast<PyLongObject*>(object)));
                return true;
            }
#else
            Py_ssize_t size = Py_SIZE(object);
            if (size >= -1 && size <= 1)
            {
                value = static_cast<long long>(size) *
                        static_cast<long long>(reinterpret_cast<PyLongObject*>(object)->ob_digit[0]);
                return true;
            }
#endif
            int overflow = 0;
            value = PyLong_AsLongLongAndOverflow(object, &overflow);
            return overflow == 0;  // (an exact int sets no error: -1 is a value here)
        }

        bool fast_store_float(void* slot, scalar_kind kind, double value) noexcept
        {
            if (kind == scalar_kind::f64)
            {
                std::memcpy(slot, &value, sizeof value);
                return true;
            }
            if (!(std::fabs(value) <= FLT_MAX))  // an overflow (or a NaN: the general path stores it)
            {
                return false;
            }
            auto single = static_cast<float>(value);
            std::memcpy(slot, &single, sizeof single);
            return true;
        }
    }

    bool fast_launch_cache::knows(const launch_plan& plan, PyObject* const* args, std::size_t nargs) const noexcept
    {
        for (std::size_t k = 0, count = m_count.load(std::memory_order_acquire); k < count; ++k)
        {
            const entry* e = m_entries[k].load(std::memory_order_acquire);
            if (e->plan != &plan || e->arguments.size() != nargs)
            {
                continue;
            }
            std::size_t i = 0;
            while (i < nargs && Py_TYPE(args[i]) == e->arguments[i].type)
            {
                ++i;
            }
            if (i == nargs)
            {
                return true;
            }
        }
        return false;
    }

    bool fast_launch_cache::convert_floats(const entry& e, unsigned char* data, PyObject* const* args) noexcept
    {
        for (const float_slot& f : e.floats)
        {
            PyObject* object = args[f.index];
            if (Py_TYPE(object) != &PyFloat_Type)
            {
                return false;  // the type was checked by the general path for another call, not this one
            }
            double value = PyFloat_AS_DOUBLE(object);
            if (!(std::fabs(value) <= FLT_MAX))  // an overflow (or a NaN: the general path stores it)
            {
                return false;
            }
            auto single = static_cast<float>(value);
            std::memcpy(data + f.offset, &single, sizeof single);
        }
        return true;
    }

    fast_launch_cache::entry::~entry()
    {
        if (!Py_IsInitialized() || !PyGILState_Check())
        {
            return;
        }
        for (std::size_t k = 0; k < call.objects.size(); ++k)
        {
            if (arguments[k].how != step::device_array)
            {
                Py_XDECREF(call.objects[k]);
            }
        }
    }

    void fast_launch_cache::remember_call(const entry& e, const unsigned char* data, PyObject* const* args,
                                          const where& here, std::uint64_t releases, std::uint64_t gone) noexcept
    {
        call_memo& c = e.call;
        for (std::size_t k = 0, n = e.arity; k < n; ++k)
        {
            PyObject* now = args[k];
            PyObject*& was = c.objects[k];
            if (now != was)
            {
                // A float, an int or None (exact types: letting go of one runs no Python code), held; a
                // DeviceArray borrowed (holding it would keep its device memory after the caller let it go).
                if (e.arguments[k].how != step::device_array)
                {
                    Py_INCREF(now);
                    Py_XDECREF(was);
                }
                was = now;
            }
        }
        std::memcpy(c.block.data(), data, c.block.size());
        c.releases = releases;
        c.arrays_gone = gone;
        c.at = here;
        c.valid = true;
    }

    bool fast_launch_cache::convert_arrays(const entry& e, unsigned char* data, PyObject* const* args,
                                           const where& here, std::uint64_t releases, std::uint64_t gone) noexcept
    {
        std::size_t count = e.arrays.size();
        if (count == 0)
        {
            return true;
        }
        array_memo& memo = e.memo;
        if (memo.valid && memo.releases == releases && memo.arrays_gone == gone && memo.at.session == here.session &&
            memo.at.generation == here.generation)
        {
            bool same = true;
            for (std::size_t k = 0; k < count; ++k)
            {
                same &= args[e.arrays[k].index] == memo.objects[k];
            }
            if (same)
            {
                for (std::size_t k = 0; k < count; ++k)
                {
                    std::memcpy(data + e.arrays[k].offset, &memo.addresses[k], sizeof(std::uint64_t));
                }
                return true;
            }
        }
        memo.valid = false;
        PyTypeObject* array_type = device_array_type();
        for (std::size_t k = 0; k < count; ++k)
        {
            const array_slot& a = e.arrays[k];
            PyObject* object = args[a.index];
            if (Py_TYPE(object) != array_type)
            {
                return false;
            }
            const device_array& array = simple_instance<device_array>(object);  // (checked when learned)
            // The element type and the device belong to the array, not to its Python type: checked on every
            // call. Another device (peer access) and an empty array go the general path. pointer_in: this
            // session's allocation in the launch's context generation (a view, another device, a closed
            // session: 0, and the general path says what is wrong). An array that is not a view owns an
            // allocation of exactly its bytes (make_array), and an allocation of 0 bytes has the address 0: so
            // a non-zero address is also a non-empty array, without the shape's product.
            std::uint64_t address = array.buffer->pointer_in(*here.session, here.generation);
            if (address == 0 || array.kind != a.kind)
            {
                return false;
            }
            std::memcpy(data + a.offset, &address, sizeof address);
            memo.objects[k] = object;
            memo.addresses[k] = address;
        }
        memo.releases = releases;
        memo.arrays_gone = gone;
        memo.at = here;
        memo.valid = true;
        return true;
    }

    bool fast_launch_cache::convert_ints(const entry& e, unsigned char* data, PyObject* const* args) noexcept
    {
        for (const array_slot& i : e.ints)
        {
            PyObject* object = args[i.index];
            long long value = 0;
            if (Py_TYPE(object) != &PyLong_Type || !exact_int_value(object, value) ||
                !fast_store_integer(data + i.offset, i.kind, value))
            {
                return false;
            }
        }
        return true;
    }

    bool fast_launch_cache::convert_step(const argument& a, void* slot, PyObject* object, const where& here) noexcept
    {
        if (Py_TYPE(object) != a.type)
        {
            return false;
        }
        switch (a.how)
        {
        case step::float_to_f32:
        case step::float_to_f64:
            return fast_store_float(slot, a.kind, PyFloat_AS_DOUBLE(object));
        case step::int_to_integer:
        {
            long long value = 0;
            return exact_int_value(object, value) && fast_store_integer(slot, a.kind, value);
        }
        case step::int_to_float:
        {
            long long value = 0;
            return exact_int_value(object, value) && fast_store_float(slot, a.kind, static_cast<double>(value));
        }
        case step::device_array:
        {
            const device_array& array = unchecked_instance<device_array>(object);
            std::uint64_t address = array.buffer->pointer_in(*here.session, here.generation);
            if (address == 0 || array.kind != a.kind || array.size() == 0)
            {
                return false;
            }
            std::memcpy(slot, &address, sizeof address);
            return true;
        }
        case step::null_pointer:
        {
            std::uint64_t null = 0;
            std::memcpy(slot, &null, sizeof null);
            return true;
        }
        }
        return false;
    }

    bool fast_launch_cache::convert(const entry& e, unsigned char* data, PyObject* const* args,
                                    const where& here) noexcept
    {
        // Read before any argument (acquire): a release or departure after this changes the counters the next
        // call compares, so neither memo can keep an address read after it.
        std::uint64_t releases = device_buffer::releases();
        std::uint64_t gone = g_device_arrays_gone.load(std::memory_order_acquire);
        call_memo& c = e.call;
        if (c.valid && c.releases == releases && c.arrays_gone == gone && c.at.session == here.session &&
            c.at.generation == here.generation)
        {
            std::size_t k = 0;
            std::size_t n = e.arity;
            while (k < n && args[k] == c.objects[k])
            {
                ++k;
            }
            if (k == n)
            {
                std::memcpy(data, c.block.data(), c.block.size());
                c.misses = 0;
                return true;
            }
        }
        if (!convert_floats(e, data, args) || !convert_arrays(e, data, args, here, releases, gone) ||
            !convert_ints(e, data, args))
        {
            return false;
        }
        for (std::size_t k = 0, n = e.rest.size(); k < n; ++k)
        {
            const argument& a = e.rest[k];
            if (!convert_step(a, data + a.offset, args[e.rest_index[k]], here))
            {
                return false;
            }
        }
        std::uint32_t misses = ++c.misses;
        if (misses <= 2 || misses % 32 == 0)
        {
            remember_call(e, data, args, here, releases, gone);
        }
        return true;
    }

    const fast_launch_cache::entry* fast_launch_cache::convert(const launch_plan& plan, unsigned char* data,
                                                               PyObject* const* args, std::size_t nargs,
                                                               const where& here) const
    {
        for (std::size_t k = 0, count = m_count.load(std::memory_order_acquire); k < count; ++k)
        {
            const entry* e = m_entries[k].load(std::memory_order_acquire);
            if (e->plan == &plan && e->arity == nargs && convert(*e, data, args, here))
            {
                return e;
            }
        }
        return nullptr;
    }

    bool fast_launch_cache::launch(cuda_kernel& kernel, const launch_dims& dims, PyObject* stream_object,
                                   PyObject* const* args, std::size_t nargs, std::atomic<const void*>* validated)
    {
        if (m_count.load(std::memory_order_acquire) == 0 || stream_object != Py_None)
        {
            return false;
        }
        cuda_module& module = *kernel.module();
        cuda_session& session = module.session();
        // What the general path does around the launch that a type cannot tell: a stale module's warning, a
        // capture (the default stream of a capturing thread is its graph's), a note to pass on afterwards.
        if (module.stale() || session.captures().of_this_thread() != nullptr || !module.fallback_note().empty())
        {
            return false;
        }
        CUstream stream = session.stream();
        if (session.captures().on_stream(stream) != nullptr)
        {
            return false;
        }
        const launch_plan& plan = kernel.plan_for_launch();
        argument_block block(plan);
        where here{&session, session.generation()};
        if (here.generation == 0 || !convert(plan, static_cast<unsigned char*>(block.data()), args, nargs, here))
        {
            return false;
        }
        kernel.launch(dims, stream, block, validated);
        return true;
    }

    void fast_launch_cache::learn(cuda_kernel& kernel, PyObject* const* args, std::size_t nargs) noexcept
    {
        try
        {
            remember(kernel, args, nargs);
        }
        catch (...)
        {
            // Out of memory for an entry: these types go the general path, as any unlearned ones do.
        }
    }

    void fast_launch_cache::remember(cuda_kernel& kernel, PyObject* const* args, std::size_t nargs)
    {
        const launch_plan& plan = kernel.plan_for_launch();
        if (m_count.load(std::memory_order_acquire) == capacity || knows(plan, args, nargs))
        {
            return;
        }
        if (plan.arity() != nargs)
        {
            return;
        }
        auto made = std::make_unique<entry>();
        made->plan = &plan;
        made->arity = nargs;
        PyTypeObject* array_type = device_array_type();
        for (std::size_t i = 0; i < nargs; ++i)
        {
            PyTypeObject* type = Py_TYPE(args[i]);
            const slot_kind& slot = plan.kinds()[i];
            bool floating = slot.kind == scalar_kind::f32 || slot.kind == scalar_kind::f64;
            step chosen;
            if (slot.cls == parameter_class::scalar && type == &PyFloat_Type && floating)
                chosen = slot.kind == scalar_kind::f32 ? step::float_to_f32 : step::float_to_f64;
            else if (slot.cls == parameter_class::scalar && type == &PyLong_Type && is_integer_kind(slot.kind))
                chosen = step::int_to_integer;
            else if (slot.cls == parameter_class::scalar && type == &PyLong_Type && floating)
                chosen = step::int_to_float;
            else if (slot.cls == parameter_class::pointer && type == array_type && slot.kind != scalar_kind::unknown)
                chosen = step::device_array;
            else if (slot.cls == parameter_class::pointer && args[i] == Py_None)
                chosen = step::null_pointer;
            else
                return;  // a type only the general path converts
            argument made_argument{type, plan.offsets()[i], chosen, slot.kind};
            made->arguments.push_back(made_argument);
            if (chosen == step::float_to_f32)
                made->floats.push_back({i, made_argument.offset});
            else if (chosen == step::device_array && has_simple_layout(args[i]))
                made->arrays.push_back({i, made_argument.offset, slot.kind});
            else if (chosen == step::int_to_integer)
                made->ints.push_back({i, made_argument.offset, slot.kind});
            else
            {
                made->rest.push_back(made_argument);
                made->rest_index.push_back(i);
            }
        }
        made->memo.objects.assign(made->arrays.size(), nullptr);
        made->memo.addresses.assign(made->arrays.size(), 0);
        made->call.objects.assign(nargs, nullptr);
        made->call.block.assign(plan.block_bytes(), 0);
        std::lock_guard<std::mutex> lock(m_learning);
        std::size_t count = m_count.load(std::memory_order_acquire);
        if (count == capacity || knows(plan, args, nargs))
        {
            return;  // another thread filled the last slot, or learned these types, meanwhile
        }
        m_entries[count].store(made.get(), std::memory_order_release);
        m_owned.push_back(std::move(made));
        m_count.store(count + 1, std::memory_order_release);
    }
}
