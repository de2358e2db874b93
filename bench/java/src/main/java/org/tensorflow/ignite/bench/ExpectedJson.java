package org.tensorflow.ignite.bench;

import java.math.BigDecimal;
import java.sql.Time;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.binary.BinaryType;

/**
 * The JSON encoding of expected values that TypeWriter prints, applied alike to the Java
 * values it writes and to what Ignite's client reads back (so the two can be compared).
 *
 * <p>Plain encoding, used for fields (whose type the record's {@code "types"} map names):
 * <table>
 *   <tr><td>byte, short, int, long</td><td>JSON integer (exact; longs may exceed 2^53)</td></tr>
 *   <tr><td>float</td><td>the float widened to double, shortest round-trip decimal</td></tr>
 *   <tr><td>double</td><td>shortest round-trip decimal</td></tr>
 *   <tr><td>char</td><td>a one-character string</td></tr>
 *   <tr><td>boolean</td><td>true / false</td></tr>
 *   <tr><td>String</td><td>string (JSON \\u escapes; non-BMP as surrogate pairs)</td></tr>
 *   <tr><td>UUID</td><td>canonical string, e.g. "0123...-..."</td></tr>
 *   <tr><td>Date (also java.sql.Date)</td><td>epoch milliseconds, the long Ignite stores</td></tr>
 *   <tr><td>Timestamp</td><td>{"epoch_ms": getTime(), "nanos": getNanos() % 1000000} — exactly the
 *       long and the sub-millisecond int that Ignite stores; the instant is epoch_ms ms + nanos ns</td></tr>
 *   <tr><td>Time</td><td>getTime(): the long Ignite stores (ms since midnight UTC for values
 *       TypeWriter makes in cache mode)</td></tr>
 *   <tr><td>decimal</td><td>BigDecimal.toString(): Python's Decimal(s) has the same digits and
 *       exponent (scale), e.g. "1.2300", "1E+5", "0E-30"</td></tr>
 *   <tr><td>enum</td><td>{"type": type name, "ordinal": int, "name": constant name}</td></tr>
 *   <tr><td>binary object</td><td>{"type_name": name, "fields": {field: plain value}}; a field
 *       missing from the object's schema is absent, a null field is null</td></tr>
 *   <tr><td>primitive arrays, String[], UUID[], Date[], Timestamp[], Time[], decimal[]</td>
 *       <td>list of plain elements (byte[] as signed ints -128..127; nulls as null)</td></tr>
 *   <tr><td>Object[], collection</td><td>list of tagged elements</td></tr>
 *   <tr><td>map</td><td>list of [tagged key, tagged value] pairs, in iteration order</td></tr>
 * </table>
 * A tagged element is {"type": T, "value": plain value} with T the Ignite type name
 * ("int", "long", "String", "UUID", "Timestamp", "decimal", "Enum", "Object", "byte[]", ...,
 * "null" for a null element), because a mixed container's element types are not in the metadata.
 */
final class ExpectedJson {
    private ExpectedJson() {
    }

    /** A binary object to be built: type name and fields in order; values are plain Java values. */
    record SourceObject(String typeName, LinkedHashMap<String, Object> fields) {
    }

    /** A binary enum value of a registered enum type. */
    record EnumValue(String typeName, int ordinal, String name) {
    }

    /** A null field whose metadata type is {@code type}. */
    record TypedNull(Class<?> type) {
    }

    static Object plain(Object v) {
        if (v == null || v instanceof TypedNull)
            return null;
        if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long)
            return ((Number)v).longValue();
        if (v instanceof Float || v instanceof Double)
            return ((Number)v).doubleValue();
        if (v instanceof Character || v instanceof String)
            return v.toString();
        if (v instanceof Boolean)
            return v;
        if (v instanceof UUID)
            return v.toString();
        if (v instanceof Timestamp) {
            Timestamp ts = (Timestamp)v;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("epoch_ms", ts.getTime());
            m.put("nanos", (long)(ts.getNanos() % 1_000_000));
            return m;
        }
        if (v instanceof Date) // java.util.Date, java.sql.Date, java.sql.Time
            return ((Date)v).getTime();
        if (v instanceof BigDecimal)
            return v.toString();
        if (v instanceof EnumValue) {
            EnumValue e = (EnumValue)v;
            return enumJson(e.typeName(), e.ordinal(), e.name());
        }
        if (v instanceof SourceObject) {
            SourceObject o = (SourceObject)v;
            Map<String, Object> fields = new LinkedHashMap<>();
            o.fields().forEach((k, fv) -> fields.put(k, plain(fv)));
            return objectJson(o.typeName(), fields);
        }
        if (v instanceof BinaryObject) {
            BinaryObject bo = (BinaryObject)v;
            BinaryType t = bo.type();
            if (t.isEnum())
                return enumJson(t.typeName(), bo.enumOrdinal(), bo.enumName());
            Map<String, Object> fields = new LinkedHashMap<>();
            for (String name : t.fieldNames()) {
                if (bo.hasField(name))
                    fields.put(name, plain(bo.field(name)));
            }
            return objectJson(t.typeName(), fields);
        }
        if (v instanceof Enum)
            return enumJson(v.getClass().getName(), ((Enum<?>)v).ordinal(), ((Enum<?>)v).name());
        if (v instanceof Object[]) {
            Object[] a = (Object[])v;
            boolean tagged = a.getClass() == Object[].class;
            List<Object> out = new ArrayList<>(a.length);
            for (Object o : a)
                out.add(tagged ? tagged(o) : plain(o));
            return out;
        }
        if (v instanceof Collection) {
            List<Object> out = new ArrayList<>();
            for (Object o : (Collection<?>)v)
                out.add(tagged(o));
            return out;
        }
        if (v instanceof Map) {
            List<Object> out = new ArrayList<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>)v).entrySet())
                out.add(List.of(tagged(e.getKey()), tagged(e.getValue())));
            return out;
        }
        if (v.getClass().isArray()) {
            int n = java.lang.reflect.Array.getLength(v);
            List<Object> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++)
                out.add(plain(java.lang.reflect.Array.get(v, i)));
            return out;
        }
        throw new IllegalArgumentException("no JSON encoding for " + v.getClass().getName());
    }

    static Map<String, Object> tagged(Object v) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", typeName(v));
        m.put("value", plain(v));
        return m;
    }

    /** Ignite's name of a value's binary type, as in binary metadata (BinaryType.fieldTypeName). */
    static String typeName(Object v) {
        if (v == null || v instanceof TypedNull)
            return "null";
        if (v instanceof Byte) return "byte";
        if (v instanceof Short) return "short";
        if (v instanceof Integer) return "int";
        if (v instanceof Long) return "long";
        if (v instanceof Float) return "float";
        if (v instanceof Double) return "double";
        if (v instanceof Character) return "char";
        if (v instanceof Boolean) return "boolean";
        if (v instanceof String) return "String";
        if (v instanceof UUID) return "UUID";
        if (v instanceof Timestamp) return "Timestamp";
        if (v instanceof Time) return "Time";
        if (v instanceof Date) return "Date";
        if (v instanceof BigDecimal) return "decimal";
        if (v instanceof EnumValue || v instanceof Enum) return "Enum";
        if (v instanceof BinaryObject) return ((BinaryObject)v).type().isEnum() ? "Enum" : "Object";
        if (v instanceof SourceObject) return "Object";
        if (v instanceof Collection) return "Collection";
        if (v instanceof Map) return "Map";
        if (v instanceof byte[]) return "byte[]";
        if (v instanceof short[]) return "short[]";
        if (v instanceof int[]) return "int[]";
        if (v instanceof long[]) return "long[]";
        if (v instanceof float[]) return "float[]";
        if (v instanceof double[]) return "double[]";
        if (v instanceof char[]) return "char[]";
        if (v instanceof boolean[]) return "boolean[]";
        if (v instanceof String[]) return "String[]";
        if (v instanceof UUID[]) return "UUID[]";
        if (v instanceof Timestamp[]) return "Timestamp[]";
        if (v instanceof Time[]) return "Time[]";
        if (v instanceof Date[]) return "Date[]";
        if (v instanceof BigDecimal[]) return "decimal[]";
        if (v instanceof Object[]) return "Object[]";
        throw new IllegalArgumentException("no Ignite type name for " + v.getClass().getName());
    }

    private static Map<String, Object> enumJson(String type, int ordinal, String name) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        m.put("ordinal", (long)ordinal);
        m.put("name", name);
        return m;
    }

    private static Map<String, Object> objectJson(String type, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type_name", type);
        m.put("fields", fields);
        return m;
    }
}
