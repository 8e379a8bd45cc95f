// xcuda stand-in helper for the host-only library headers (<iostream>, <vector>, <string>, <map>, <thread>,
// ...), which NVRTC does not have: it compiles device code alone, with no host C++ library. A .cu file
// includes them for its host code, which nvcc compiles with the host compiler; a cell sets its host
// functions aside (host_code.hpp) and compiles the kernels. So these headers only declare the names, for
// that host code to parse until it is set aside; a use in device code (an object, a call, a << on std::cout)
// instantiates a template whose static_assert says why it cannot be and what to do instead. Nothing here is
// a variable or a non-template function, which NVRTC would refuse as host code in every cell.
#pragma once
namespace xcuda_host_library
{
    template <class...>
    struct never
    {
        static constexpr bool value = false;
    };
    // The type of std::cout, std::cerr, std::cin and of the manipulators (std::endl, std::setw(4), ...).
    struct stream
    {
    };
}
#define XCUDA_HOST_ONLY(name, header)                                                                          \
    name " is host-only C++ (" header "): NVRTC compiles device code alone and has no host C++ library. Host "  \
    "functions that use it are set aside and the kernels compile; in device code use printf, fixed-size "      \
    "arrays (cuda::std::array, cuda::std::span) and pointers to device memory, or run the whole program with " \
    "%%cuda_program (nvcc)"
#define XCUDA_HOST_ONLY_CLASS(name, shown, header)                                                             \
    template <class... T>                                                                                      \
    class name                                                                                                 \
    {                                                                                                          \
        static_assert(::xcuda_host_library::never<T...>::value, XCUDA_HOST_ONLY(shown, header));               \
    };
#define XCUDA_HOST_ONLY_FUNCTION(name, shown, header)                                                          \
    template <class... T>                                                                                      \
    __host__ __device__ ::xcuda_host_library::stream name(T&&...)                                              \
    {                                                                                                          \
        static_assert(::xcuda_host_library::never<T...>::value, XCUDA_HOST_ONLY(shown, header));               \
        return {};                                                                                             \
    }
namespace xcuda_host_library
{
    // Found by argument-dependent lookup, in the stream type's namespace, from any namespace of the cell.
    template <class T>
    __host__ __device__ stream operator<<(stream s, T&&)
    {
        static_assert(::xcuda_host_library::never<T>::value, XCUDA_HOST_ONLY("std::cout (and every << on a stream)", "<iostream>"));
        return s;
    }
    template <class T>
    __host__ __device__ stream operator>>(stream s, T&&)
    {
        static_assert(::xcuda_host_library::never<T>::value, XCUDA_HOST_ONLY("std::cin (and every >> on a stream)", "<iostream>"));
        return s;
    }
}
namespace std
{
    // Containers.
    XCUDA_HOST_ONLY_CLASS(vector, "std::vector", "<vector>")
    XCUDA_HOST_ONLY_CLASS(map, "std::map", "<map>")
    XCUDA_HOST_ONLY_CLASS(multimap, "std::multimap", "<map>")
    XCUDA_HOST_ONLY_CLASS(set, "std::set", "<set>")
    XCUDA_HOST_ONLY_CLASS(multiset, "std::multiset", "<set>")
    XCUDA_HOST_ONLY_CLASS(unordered_map, "std::unordered_map", "<unordered_map>")
    XCUDA_HOST_ONLY_CLASS(unordered_multimap, "std::unordered_multimap", "<unordered_map>")
    XCUDA_HOST_ONLY_CLASS(unordered_set, "std::unordered_set", "<unordered_set>")
    XCUDA_HOST_ONLY_CLASS(unordered_multiset, "std::unordered_multiset", "<unordered_set>")
    XCUDA_HOST_ONLY_CLASS(list, "std::list", "<list>")
    XCUDA_HOST_ONLY_CLASS(deque, "std::deque", "<deque>")
    XCUDA_HOST_ONLY_CLASS(queue, "std::queue", "<queue>")
    XCUDA_HOST_ONLY_CLASS(priority_queue, "std::priority_queue", "<queue>")
    XCUDA_HOST_ONLY_CLASS(stack, "std::stack", "<stack>")
    // Strings.
    XCUDA_HOST_ONLY_CLASS(basic_string, "std::string", "<string>")
    typedef basic_string<char> string;
    typedef basic_string<wchar_t> wstring;
    XCUDA_HOST_ONLY_CLASS(basic_string_view, "std::string_view", "<string_view>")
    typedef basic_string_view<char> string_view;
    XCUDA_HOST_ONLY_FUNCTION(to_string, "std::to_string", "<string>")
    XCUDA_HOST_ONLY_FUNCTION(stoi, "std::stoi", "<string>")
    XCUDA_HOST_ONLY_FUNCTION(stol, "std::stol", "<string>")
    XCUDA_HOST_ONLY_FUNCTION(stoll, "std::stoll", "<string>")
    XCUDA_HOST_ONLY_FUNCTION(stoul, "std::stoul", "<string>")
    XCUDA_HOST_ONLY_FUNCTION(stof, "std::stof", "<string>")
    XCUDA_HOST_ONLY_FUNCTION(stod, "std::stod", "<string>")
    XCUDA_HOST_ONLY_FUNCTION(getline, "std::getline", "<string>")
    // Streams.
    XCUDA_HOST_ONLY_CLASS(basic_ostream, "std::ostream", "<ostream>")
    XCUDA_HOST_ONLY_CLASS(basic_istream, "std::istream", "<istream>")
    XCUDA_HOST_ONLY_CLASS(basic_iostream, "std::iostream", "<istream>")
    XCUDA_HOST_ONLY_CLASS(basic_stringstream, "std::stringstream", "<sstream>")
    XCUDA_HOST_ONLY_CLASS(basic_ostringstream, "std::ostringstream", "<sstream>")
    XCUDA_HOST_ONLY_CLASS(basic_istringstream, "std::istringstream", "<sstream>")
    XCUDA_HOST_ONLY_CLASS(basic_fstream, "std::fstream", "<fstream>")
    XCUDA_HOST_ONLY_CLASS(basic_ifstream, "std::ifstream", "<fstream>")
    XCUDA_HOST_ONLY_CLASS(basic_ofstream, "std::ofstream", "<fstream>")
    typedef basic_ostream<char> ostream;
    typedef basic_istream<char> istream;
    typedef basic_iostream<char> iostream;
    typedef basic_stringstream<char> stringstream;
    typedef basic_ostringstream<char> ostringstream;
    typedef basic_istringstream<char> istringstream;
    typedef basic_fstream<char> fstream;
    typedef basic_ifstream<char> ifstream;
    typedef basic_ofstream<char> ofstream;
    // constexpr objects are not host variables to NVRTC; a << or >> on one is what device code cannot do.
    constexpr ::xcuda_host_library::stream cout{}, cerr{}, clog{}, cin{};
    // The manipulators are functions, as in the host library, so that a user's own left() or hex() overloads
    // them rather than clashing under `using namespace std`; not templates, so that `<< std::endl` in device
    // code reaches the operator's static_assert below rather than failing to match.
#define XCUDA_HOST_ONLY_MANIPULATOR(name)                                                                      \
    __host__ __device__ inline ::xcuda_host_library::stream name(::xcuda_host_library::stream s)              \
    {                                                                                                          \
        return s;                                                                                              \
    }
    XCUDA_HOST_ONLY_MANIPULATOR(endl)
    XCUDA_HOST_ONLY_MANIPULATOR(ends)
    XCUDA_HOST_ONLY_MANIPULATOR(flush)
    XCUDA_HOST_ONLY_MANIPULATOR(fixed)
    XCUDA_HOST_ONLY_MANIPULATOR(scientific)
    XCUDA_HOST_ONLY_MANIPULATOR(hex)
    XCUDA_HOST_ONLY_MANIPULATOR(dec)
    XCUDA_HOST_ONLY_MANIPULATOR(oct)
    XCUDA_HOST_ONLY_MANIPULATOR(boolalpha)
    XCUDA_HOST_ONLY_MANIPULATOR(left)
    XCUDA_HOST_ONLY_MANIPULATOR(right)
#undef XCUDA_HOST_ONLY_MANIPULATOR
    XCUDA_HOST_ONLY_FUNCTION(setw, "std::setw", "<iomanip>")
    XCUDA_HOST_ONLY_FUNCTION(setprecision, "std::setprecision", "<iomanip>")
    XCUDA_HOST_ONLY_FUNCTION(setfill, "std::setfill", "<iomanip>")
    // Threads.
    XCUDA_HOST_ONLY_CLASS(xcuda_thread, "std::thread", "<thread>")
    using thread = xcuda_thread<>;
    namespace this_thread
    {
        XCUDA_HOST_ONLY_FUNCTION(sleep_for, "std::this_thread::sleep_for", "<thread>")
        XCUDA_HOST_ONLY_FUNCTION(yield, "std::this_thread::yield", "<thread>")
        XCUDA_HOST_ONLY_FUNCTION(get_id, "std::this_thread::get_id", "<thread>")
    }
    XCUDA_HOST_ONLY_CLASS(xcuda_mutex, "std::mutex", "<mutex>")
    using mutex = xcuda_mutex<>;
    using recursive_mutex = xcuda_mutex<int>;
    XCUDA_HOST_ONLY_CLASS(lock_guard, "std::lock_guard", "<mutex>")
    XCUDA_HOST_ONLY_CLASS(unique_lock, "std::unique_lock", "<mutex>")
    XCUDA_HOST_ONLY_CLASS(scoped_lock, "std::scoped_lock", "<mutex>")
    XCUDA_HOST_ONLY_CLASS(xcuda_condition_variable, "std::condition_variable", "<condition_variable>")
    using condition_variable = xcuda_condition_variable<>;
    XCUDA_HOST_ONLY_CLASS(future, "std::future", "<future>")
    XCUDA_HOST_ONLY_CLASS(shared_future, "std::shared_future", "<future>")
    XCUDA_HOST_ONLY_CLASS(promise, "std::promise", "<future>")
    XCUDA_HOST_ONLY_FUNCTION(async, "std::async", "<future>")
    XCUDA_HOST_ONLY_CLASS(basic_regex, "std::regex", "<regex>")
    typedef basic_regex<char> regex;
    namespace filesystem
    {
        XCUDA_HOST_ONLY_CLASS(xcuda_path, "std::filesystem::path", "<filesystem>")
        using path = xcuda_path<>;
        XCUDA_HOST_ONLY_FUNCTION(exists, "std::filesystem::exists", "<filesystem>")
    }
}
#undef XCUDA_HOST_ONLY_FUNCTION
#undef XCUDA_HOST_ONLY_CLASS
#undef XCUDA_HOST_ONLY
