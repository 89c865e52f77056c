pub use root::*;

const _: () = ::planus::check_version_compatibility("planus-1.3.0");

/// The root namespace
///
/// Generated from these locations:
/// * File `schema/ppx.fbs`
#[no_implicit_prelude]
#[allow(clippy::needless_lifetimes)]
mod root {
    /// The namespace `ppx`
    ///
    /// Generated from these locations:
    /// * File `schema/ppx.fbs`
    pub mod ppx {
        /// The union `MessageBody` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Union `MessageBody` in the file `schema/ppx.fbs:9`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub enum MessageBody {
            /// The variant of type `Handshake` in the union `MessageBody`
            Handshake(::planus::alloc::boxed::Box<self::Handshake>),

            /// The variant of type `HandshakeResult` in the union `MessageBody`
            HandshakeResult(::planus::alloc::boxed::Box<self::HandshakeResult>),

            /// The variant of type `Run` in the union `MessageBody`
            Run(::planus::alloc::boxed::Box<self::Run>),

            /// The variant of type `RunResult` in the union `MessageBody`
            RunResult(::planus::alloc::boxed::Box<self::RunResult>),

            /// The variant of type `Sample` in the union `MessageBody`
            Sample(::planus::alloc::boxed::Box<self::Sample>),

            /// The variant of type `SampleResult` in the union `MessageBody`
            SampleResult(::planus::alloc::boxed::Box<self::SampleResult>),

            /// The variant of type `Observe` in the union `MessageBody`
            Observe(::planus::alloc::boxed::Box<self::Observe>),

            /// The variant of type `ObserveResult` in the union `MessageBody`
            ObserveResult(::planus::alloc::boxed::Box<self::ObserveResult>),

            /// The variant of type `Tag` in the union `MessageBody`
            Tag(::planus::alloc::boxed::Box<self::Tag>),

            /// The variant of type `TagResult` in the union `MessageBody`
            TagResult(::planus::alloc::boxed::Box<self::TagResult>),

            /// The variant of type `Reset` in the union `MessageBody`
            Reset(::planus::alloc::boxed::Box<self::Reset>),
        }

        impl MessageBody {
            /// Creates a [MessageBodyBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> MessageBodyBuilder<::planus::Uninitialized> {
                MessageBodyBuilder(::planus::Uninitialized)
            }

            #[inline]
            pub fn create_handshake(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Handshake>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(1, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_handshake_result(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::HandshakeResult>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(2, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_run(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Run>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(3, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_run_result(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::RunResult>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(4, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_sample(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Sample>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(5, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_sample_result(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::SampleResult>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(6, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_observe(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Observe>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(7, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_observe_result(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::ObserveResult>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(8, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_tag(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Tag>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(9, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_tag_result(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::TagResult>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(10, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_reset(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Reset>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(11, value.prepare(builder).downcast())
            }
        }

        impl ::planus::WriteAsUnion<MessageBody> for MessageBody {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Self> {
                match self {
                    Self::Handshake(value) => Self::create_handshake(builder, value),
                    Self::HandshakeResult(value) => Self::create_handshake_result(builder, value),
                    Self::Run(value) => Self::create_run(builder, value),
                    Self::RunResult(value) => Self::create_run_result(builder, value),
                    Self::Sample(value) => Self::create_sample(builder, value),
                    Self::SampleResult(value) => Self::create_sample_result(builder, value),
                    Self::Observe(value) => Self::create_observe(builder, value),
                    Self::ObserveResult(value) => Self::create_observe_result(builder, value),
                    Self::Tag(value) => Self::create_tag(builder, value),
                    Self::TagResult(value) => Self::create_tag_result(builder, value),
                    Self::Reset(value) => Self::create_reset(builder, value),
                }
            }
        }

        impl ::planus::WriteAsOptionalUnion<MessageBody> for MessageBody {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::UnionOffset<Self>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }

        /// Builder for serializing an instance of the [MessageBody] type.
        ///
        /// Can be created using the [MessageBody::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct MessageBodyBuilder<T>(T);

        impl MessageBodyBuilder<::planus::Uninitialized> {
            /// Creates an instance of the [`Handshake` variant](MessageBody#variant.Handshake).
            #[inline]
            pub fn handshake<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<1, T>>
            where
                T: ::planus::WriteAsOffset<self::Handshake>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`HandshakeResult` variant](MessageBody#variant.HandshakeResult).
            #[inline]
            pub fn handshake_result<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<2, T>>
            where
                T: ::planus::WriteAsOffset<self::HandshakeResult>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Run` variant](MessageBody#variant.Run).
            #[inline]
            pub fn run<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<3, T>>
            where
                T: ::planus::WriteAsOffset<self::Run>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`RunResult` variant](MessageBody#variant.RunResult).
            #[inline]
            pub fn run_result<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<4, T>>
            where
                T: ::planus::WriteAsOffset<self::RunResult>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Sample` variant](MessageBody#variant.Sample).
            #[inline]
            pub fn sample<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<5, T>>
            where
                T: ::planus::WriteAsOffset<self::Sample>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`SampleResult` variant](MessageBody#variant.SampleResult).
            #[inline]
            pub fn sample_result<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<6, T>>
            where
                T: ::planus::WriteAsOffset<self::SampleResult>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Observe` variant](MessageBody#variant.Observe).
            #[inline]
            pub fn observe<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<7, T>>
            where
                T: ::planus::WriteAsOffset<self::Observe>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`ObserveResult` variant](MessageBody#variant.ObserveResult).
            #[inline]
            pub fn observe_result<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<8, T>>
            where
                T: ::planus::WriteAsOffset<self::ObserveResult>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Tag` variant](MessageBody#variant.Tag).
            #[inline]
            pub fn tag<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<9, T>>
            where
                T: ::planus::WriteAsOffset<self::Tag>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`TagResult` variant](MessageBody#variant.TagResult).
            #[inline]
            pub fn tag_result<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<10, T>>
            where
                T: ::planus::WriteAsOffset<self::TagResult>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Reset` variant](MessageBody#variant.Reset).
            #[inline]
            pub fn reset<T>(self, value: T) -> MessageBodyBuilder<::planus::Initialized<11, T>>
            where
                T: ::planus::WriteAsOffset<self::Reset>,
            {
                MessageBodyBuilder(::planus::Initialized(value))
            }
        }

        impl<const N: u8, T> MessageBodyBuilder<::planus::Initialized<N, T>> {
            /// Finish writing the builder to get an [UnionOffset](::planus::UnionOffset) to a serialized [MessageBody].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody>
            where
                Self: ::planus::WriteAsUnion<MessageBody>,
            {
                ::planus::WriteAsUnion::prepare(&self, builder)
            }
        }

        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<1, T>>
        where
            T: ::planus::WriteAsOffset<self::Handshake>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(1, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<1, T>>
        where
            T: ::planus::WriteAsOffset<self::Handshake>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<2, T>>
        where
            T: ::planus::WriteAsOffset<self::HandshakeResult>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(2, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<2, T>>
        where
            T: ::planus::WriteAsOffset<self::HandshakeResult>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<3, T>>
        where
            T: ::planus::WriteAsOffset<self::Run>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(3, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<3, T>>
        where
            T: ::planus::WriteAsOffset<self::Run>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<4, T>>
        where
            T: ::planus::WriteAsOffset<self::RunResult>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(4, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<4, T>>
        where
            T: ::planus::WriteAsOffset<self::RunResult>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<5, T>>
        where
            T: ::planus::WriteAsOffset<self::Sample>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(5, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<5, T>>
        where
            T: ::planus::WriteAsOffset<self::Sample>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<6, T>>
        where
            T: ::planus::WriteAsOffset<self::SampleResult>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(6, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<6, T>>
        where
            T: ::planus::WriteAsOffset<self::SampleResult>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<7, T>>
        where
            T: ::planus::WriteAsOffset<self::Observe>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(7, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<7, T>>
        where
            T: ::planus::WriteAsOffset<self::Observe>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<8, T>>
        where
            T: ::planus::WriteAsOffset<self::ObserveResult>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(8, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<8, T>>
        where
            T: ::planus::WriteAsOffset<self::ObserveResult>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<9, T>>
        where
            T: ::planus::WriteAsOffset<self::Tag>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(9, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<9, T>>
        where
            T: ::planus::WriteAsOffset<self::Tag>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<10, T>>
        where
            T: ::planus::WriteAsOffset<self::TagResult>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(10, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<10, T>>
        where
            T: ::planus::WriteAsOffset<self::TagResult>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<11, T>>
        where
            T: ::planus::WriteAsOffset<self::Reset>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<MessageBody> {
                ::planus::UnionOffset::new(11, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<MessageBody> for MessageBodyBuilder<::planus::Initialized<11, T>>
        where
            T: ::planus::WriteAsOffset<self::Reset>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<MessageBody>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }

        /// Reference to a deserialized [MessageBody].
        #[derive(Copy, Clone, Debug)]
        pub enum MessageBodyRef<'a> {
            Handshake(self::HandshakeRef<'a>),
            HandshakeResult(self::HandshakeResultRef<'a>),
            Run(self::RunRef<'a>),
            RunResult(self::RunResultRef<'a>),
            Sample(self::SampleRef<'a>),
            SampleResult(self::SampleResultRef<'a>),
            Observe(self::ObserveRef<'a>),
            ObserveResult(self::ObserveResultRef<'a>),
            Tag(self::TagRef<'a>),
            TagResult(self::TagResultRef<'a>),
            Reset(self::ResetRef<'a>),
        }

        impl<'a> ::core::convert::TryFrom<MessageBodyRef<'a>> for MessageBody {
            type Error = ::planus::Error;

            fn try_from(value: MessageBodyRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(match value {
                    MessageBodyRef::Handshake(value) => {
                        Self::Handshake(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::HandshakeResult(value) => Self::HandshakeResult(::planus::alloc::boxed::Box::new(
                        ::core::convert::TryFrom::try_from(value)?,
                    )),

                    MessageBodyRef::Run(value) => {
                        Self::Run(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::RunResult(value) => {
                        Self::RunResult(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::Sample(value) => {
                        Self::Sample(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::SampleResult(value) => {
                        Self::SampleResult(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::Observe(value) => {
                        Self::Observe(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::ObserveResult(value) => Self::ObserveResult(::planus::alloc::boxed::Box::new(
                        ::core::convert::TryFrom::try_from(value)?,
                    )),

                    MessageBodyRef::Tag(value) => {
                        Self::Tag(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::TagResult(value) => {
                        Self::TagResult(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    MessageBodyRef::Reset(value) => {
                        Self::Reset(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }
                })
            }
        }

        impl<'a> ::planus::TableReadUnion<'a> for MessageBodyRef<'a> {
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                tag: u8,
                field_offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                match tag {
                    1 => ::core::result::Result::Ok(Self::Handshake(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    2 => ::core::result::Result::Ok(Self::HandshakeResult(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    3 => ::core::result::Result::Ok(Self::Run(::planus::TableRead::from_buffer(buffer, field_offset)?)),
                    4 => ::core::result::Result::Ok(Self::RunResult(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    5 => ::core::result::Result::Ok(Self::Sample(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    6 => ::core::result::Result::Ok(Self::SampleResult(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    7 => ::core::result::Result::Ok(Self::Observe(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    8 => ::core::result::Result::Ok(Self::ObserveResult(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    9 => ::core::result::Result::Ok(Self::Tag(::planus::TableRead::from_buffer(buffer, field_offset)?)),
                    10 => ::core::result::Result::Ok(Self::TagResult(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    11 => {
                        ::core::result::Result::Ok(Self::Reset(::planus::TableRead::from_buffer(buffer, field_offset)?))
                    }
                    _ => ::core::result::Result::Err(::planus::errors::ErrorKind::UnknownUnionTag { tag }),
                }
            }
        }

        impl<'a> ::planus::VectorReadUnion<'a> for MessageBodyRef<'a> {
            const VECTOR_NAME: &'static str = "[MessageBodyRef]";
        }

        /// The table `Message` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Message` in the file `schema/ppx.fbs:23`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Message {
            /// The field `body` in the table `Message`
            pub body: ::core::option::Option<self::MessageBody>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Message {
            fn default() -> Self {
                Self { body: ::core::default::Default::default() }
            }
        }

        impl Message {
            /// Creates a [MessageBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> MessageBuilder<()> {
                MessageBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_body: impl ::planus::WriteAsOptionalUnion<self::MessageBody>,
            ) -> ::planus::Offset<Self> {
                let prepared_body = field_body.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_body.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::MessageBody>>(1);
                }
                if prepared_body.is_some() {
                    table_writer.write_entry::<u8>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_body) = prepared_body {
                            object_writer.write::<_, _, 4>(&prepared_body.offset());
                        }
                        if let ::core::option::Option::Some(prepared_body) = prepared_body {
                            object_writer.write::<_, _, 1>(&prepared_body.tag());
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Message>> for Message {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Message> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Message>> for Message {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Message>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Message> for Message {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Message> {
                Message::create(builder, &self.body)
            }
        }

        /// Builder for serializing an instance of the [Message] type.
        ///
        /// Can be created using the [Message::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct MessageBuilder<State>(State);

        impl MessageBuilder<()> {
            /// Setter for the [`body` field](Message#structfield.body).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn body<T0>(self, value: T0) -> MessageBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptionalUnion<self::MessageBody>,
            {
                MessageBuilder((value,))
            }

            /// Sets the [`body` field](Message#structfield.body) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn body_as_null(self) -> MessageBuilder<((),)> {
                self.body(())
            }
        }

        impl<T0> MessageBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Message].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Message>
            where
                Self: ::planus::WriteAsOffset<Message>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptionalUnion<self::MessageBody>> ::planus::WriteAs<::planus::Offset<Message>>
            for MessageBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Message>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Message> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptionalUnion<self::MessageBody>> ::planus::WriteAsOptional<::planus::Offset<Message>>
            for MessageBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Message>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Message>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptionalUnion<self::MessageBody>> ::planus::WriteAsOffset<Message> for MessageBuilder<(T0,)> {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Message> {
                let (v0,) = &self.0;
                Message::create(builder, v0)
            }
        }

        /// Reference to a deserialized [Message].
        #[derive(Copy, Clone)]
        pub struct MessageRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> MessageRef<'a> {
            /// Getter for the [`body` field](Message#structfield.body).
            #[inline]
            pub fn body(&self) -> ::planus::Result<::core::option::Option<self::MessageBodyRef<'a>>> {
                self.0.access_union(0, "Message", "body")
            }
        }

        impl<'a> ::core::fmt::Debug for MessageRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("MessageRef");
                if let ::core::option::Option::Some(field_body) = self.body().transpose() {
                    f.field("body", &field_body);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<MessageRef<'a>> for Message {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: MessageRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    body: if let ::core::option::Option::Some(body) = value.body()? {
                        ::core::option::Option::Some(::core::convert::TryInto::try_into(body)?)
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for MessageRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for MessageRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[MessageRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Message>> for Message {
            type Value = ::planus::Offset<Message>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Message>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for MessageRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[MessageRef]", "read_as_root", 0))
            }
        }

        /// The table `Tensor` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Tensor` in the file `schema/ppx.fbs:27`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Tensor {
            /// The field `data` in the table `Tensor`
            pub data: ::core::option::Option<::planus::alloc::vec::Vec<f64>>,
            /// The field `shape` in the table `Tensor`
            pub shape: ::core::option::Option<::planus::alloc::vec::Vec<i32>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Tensor {
            fn default() -> Self {
                Self { data: ::core::default::Default::default(), shape: ::core::default::Default::default() }
            }
        }

        impl Tensor {
            /// Creates a [TensorBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> TensorBuilder<()> {
                TensorBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_data: impl ::planus::WriteAsOptional<::planus::Offset<[f64]>>,
                field_shape: impl ::planus::WriteAsOptional<::planus::Offset<[i32]>>,
            ) -> ::planus::Offset<Self> {
                let prepared_data = field_data.prepare(builder);
                let prepared_shape = field_shape.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_data.is_some() {
                    table_writer.write_entry::<::planus::Offset<[f64]>>(0);
                }
                if prepared_shape.is_some() {
                    table_writer.write_entry::<::planus::Offset<[i32]>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_data) = prepared_data {
                            object_writer.write::<_, _, 4>(&prepared_data);
                        }
                        if let ::core::option::Option::Some(prepared_shape) = prepared_shape {
                            object_writer.write::<_, _, 4>(&prepared_shape);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Tensor>> for Tensor {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tensor> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Tensor>> for Tensor {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Tensor>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Tensor> for Tensor {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tensor> {
                Tensor::create(builder, &self.data, &self.shape)
            }
        }

        /// Builder for serializing an instance of the [Tensor] type.
        ///
        /// Can be created using the [Tensor::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct TensorBuilder<State>(State);

        impl TensorBuilder<()> {
            /// Setter for the [`data` field](Tensor#structfield.data).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn data<T0>(self, value: T0) -> TensorBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<[f64]>>,
            {
                TensorBuilder((value,))
            }

            /// Sets the [`data` field](Tensor#structfield.data) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn data_as_null(self) -> TensorBuilder<((),)> {
                self.data(())
            }
        }

        impl<T0> TensorBuilder<(T0,)> {
            /// Setter for the [`shape` field](Tensor#structfield.shape).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn shape<T1>(self, value: T1) -> TensorBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<[i32]>>,
            {
                let (v0,) = self.0;
                TensorBuilder((v0, value))
            }

            /// Sets the [`shape` field](Tensor#structfield.shape) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn shape_as_null(self) -> TensorBuilder<(T0, ())> {
                self.shape(())
            }
        }

        impl<T0, T1> TensorBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Tensor].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tensor>
            where
                Self: ::planus::WriteAsOffset<Tensor>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<[f64]>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<[i32]>>,
        > ::planus::WriteAs<::planus::Offset<Tensor>> for TensorBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Tensor>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tensor> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<[f64]>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<[i32]>>,
        > ::planus::WriteAsOptional<::planus::Offset<Tensor>> for TensorBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Tensor>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Tensor>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<[f64]>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<[i32]>>,
        > ::planus::WriteAsOffset<Tensor> for TensorBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tensor> {
                let (v0, v1) = &self.0;
                Tensor::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [Tensor].
        #[derive(Copy, Clone)]
        pub struct TensorRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> TensorRef<'a> {
            /// Getter for the [`data` field](Tensor#structfield.data).
            #[inline]
            pub fn data(&self) -> ::planus::Result<::core::option::Option<::planus::Vector<'a, f64>>> {
                self.0.access(0, "Tensor", "data")
            }

            /// Getter for the [`shape` field](Tensor#structfield.shape).
            #[inline]
            pub fn shape(&self) -> ::planus::Result<::core::option::Option<::planus::Vector<'a, i32>>> {
                self.0.access(1, "Tensor", "shape")
            }
        }

        impl<'a> ::core::fmt::Debug for TensorRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("TensorRef");
                if let ::core::option::Option::Some(field_data) = self.data().transpose() {
                    f.field("data", &field_data);
                }
                if let ::core::option::Option::Some(field_shape) = self.shape().transpose() {
                    f.field("shape", &field_shape);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<TensorRef<'a>> for Tensor {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: TensorRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    data: if let ::core::option::Option::Some(data) = value.data()? {
                        ::core::option::Option::Some(data.to_vec()?)
                    } else {
                        ::core::option::Option::None
                    },
                    shape: if let ::core::option::Option::Some(shape) = value.shape()? {
                        ::core::option::Option::Some(shape.to_vec()?)
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for TensorRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for TensorRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[TensorRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Tensor>> for Tensor {
            type Value = ::planus::Offset<Tensor>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Tensor>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for TensorRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[TensorRef]", "read_as_root", 0))
            }
        }

        /// The union `Distribution` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Union `Distribution` in the file `schema/ppx.fbs:32`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub enum Distribution {
            /// The variant of type `Normal` in the union `Distribution`
            Normal(::planus::alloc::boxed::Box<self::Normal>),

            /// The variant of type `Uniform` in the union `Distribution`
            Uniform(::planus::alloc::boxed::Box<self::Uniform>),

            /// The variant of type `Categorical` in the union `Distribution`
            Categorical(::planus::alloc::boxed::Box<self::Categorical>),

            /// The variant of type `Poisson` in the union `Distribution`
            Poisson(::planus::alloc::boxed::Box<self::Poisson>),

            /// The variant of type `Bernoulli` in the union `Distribution`
            Bernoulli(::planus::alloc::boxed::Box<self::Bernoulli>),

            /// The variant of type `Beta` in the union `Distribution`
            Beta(::planus::alloc::boxed::Box<self::Beta>),

            /// The variant of type `Exponential` in the union `Distribution`
            Exponential(::planus::alloc::boxed::Box<self::Exponential>),

            /// The variant of type `Gamma` in the union `Distribution`
            Gamma(::planus::alloc::boxed::Box<self::Gamma>),

            /// The variant of type `LogNormal` in the union `Distribution`
            LogNormal(::planus::alloc::boxed::Box<self::LogNormal>),

            /// The variant of type `Binomial` in the union `Distribution`
            Binomial(::planus::alloc::boxed::Box<self::Binomial>),

            /// The variant of type `Weibull` in the union `Distribution`
            Weibull(::planus::alloc::boxed::Box<self::Weibull>),
        }

        impl Distribution {
            /// Creates a [DistributionBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> DistributionBuilder<::planus::Uninitialized> {
                DistributionBuilder(::planus::Uninitialized)
            }

            #[inline]
            pub fn create_normal(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Normal>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(1, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_uniform(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Uniform>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(2, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_categorical(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Categorical>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(3, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_poisson(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Poisson>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(4, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_bernoulli(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Bernoulli>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(5, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_beta(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Beta>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(6, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_exponential(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Exponential>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(7, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_gamma(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Gamma>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(8, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_log_normal(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::LogNormal>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(9, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_binomial(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Binomial>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(10, value.prepare(builder).downcast())
            }

            #[inline]
            pub fn create_weibull(
                builder: &mut ::planus::Builder,
                value: impl ::planus::WriteAsOffset<self::Weibull>,
            ) -> ::planus::UnionOffset<Self> {
                ::planus::UnionOffset::new(11, value.prepare(builder).downcast())
            }
        }

        impl ::planus::WriteAsUnion<Distribution> for Distribution {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Self> {
                match self {
                    Self::Normal(value) => Self::create_normal(builder, value),
                    Self::Uniform(value) => Self::create_uniform(builder, value),
                    Self::Categorical(value) => Self::create_categorical(builder, value),
                    Self::Poisson(value) => Self::create_poisson(builder, value),
                    Self::Bernoulli(value) => Self::create_bernoulli(builder, value),
                    Self::Beta(value) => Self::create_beta(builder, value),
                    Self::Exponential(value) => Self::create_exponential(builder, value),
                    Self::Gamma(value) => Self::create_gamma(builder, value),
                    Self::LogNormal(value) => Self::create_log_normal(builder, value),
                    Self::Binomial(value) => Self::create_binomial(builder, value),
                    Self::Weibull(value) => Self::create_weibull(builder, value),
                }
            }
        }

        impl ::planus::WriteAsOptionalUnion<Distribution> for Distribution {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::UnionOffset<Self>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }

        /// Builder for serializing an instance of the [Distribution] type.
        ///
        /// Can be created using the [Distribution::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct DistributionBuilder<T>(T);

        impl DistributionBuilder<::planus::Uninitialized> {
            /// Creates an instance of the [`Normal` variant](Distribution#variant.Normal).
            #[inline]
            pub fn normal<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<1, T>>
            where
                T: ::planus::WriteAsOffset<self::Normal>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Uniform` variant](Distribution#variant.Uniform).
            #[inline]
            pub fn uniform<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<2, T>>
            where
                T: ::planus::WriteAsOffset<self::Uniform>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Categorical` variant](Distribution#variant.Categorical).
            #[inline]
            pub fn categorical<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<3, T>>
            where
                T: ::planus::WriteAsOffset<self::Categorical>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Poisson` variant](Distribution#variant.Poisson).
            #[inline]
            pub fn poisson<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<4, T>>
            where
                T: ::planus::WriteAsOffset<self::Poisson>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Bernoulli` variant](Distribution#variant.Bernoulli).
            #[inline]
            pub fn bernoulli<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<5, T>>
            where
                T: ::planus::WriteAsOffset<self::Bernoulli>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Beta` variant](Distribution#variant.Beta).
            #[inline]
            pub fn beta<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<6, T>>
            where
                T: ::planus::WriteAsOffset<self::Beta>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Exponential` variant](Distribution#variant.Exponential).
            #[inline]
            pub fn exponential<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<7, T>>
            where
                T: ::planus::WriteAsOffset<self::Exponential>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Gamma` variant](Distribution#variant.Gamma).
            #[inline]
            pub fn gamma<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<8, T>>
            where
                T: ::planus::WriteAsOffset<self::Gamma>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`LogNormal` variant](Distribution#variant.LogNormal).
            #[inline]
            pub fn log_normal<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<9, T>>
            where
                T: ::planus::WriteAsOffset<self::LogNormal>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Binomial` variant](Distribution#variant.Binomial).
            #[inline]
            pub fn binomial<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<10, T>>
            where
                T: ::planus::WriteAsOffset<self::Binomial>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }

            /// Creates an instance of the [`Weibull` variant](Distribution#variant.Weibull).
            #[inline]
            pub fn weibull<T>(self, value: T) -> DistributionBuilder<::planus::Initialized<11, T>>
            where
                T: ::planus::WriteAsOffset<self::Weibull>,
            {
                DistributionBuilder(::planus::Initialized(value))
            }
        }

        impl<const N: u8, T> DistributionBuilder<::planus::Initialized<N, T>> {
            /// Finish writing the builder to get an [UnionOffset](::planus::UnionOffset) to a serialized [Distribution].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution>
            where
                Self: ::planus::WriteAsUnion<Distribution>,
            {
                ::planus::WriteAsUnion::prepare(&self, builder)
            }
        }

        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<1, T>>
        where
            T: ::planus::WriteAsOffset<self::Normal>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(1, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<1, T>>
        where
            T: ::planus::WriteAsOffset<self::Normal>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<2, T>>
        where
            T: ::planus::WriteAsOffset<self::Uniform>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(2, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<2, T>>
        where
            T: ::planus::WriteAsOffset<self::Uniform>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<3, T>>
        where
            T: ::planus::WriteAsOffset<self::Categorical>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(3, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<3, T>>
        where
            T: ::planus::WriteAsOffset<self::Categorical>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<4, T>>
        where
            T: ::planus::WriteAsOffset<self::Poisson>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(4, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<4, T>>
        where
            T: ::planus::WriteAsOffset<self::Poisson>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<5, T>>
        where
            T: ::planus::WriteAsOffset<self::Bernoulli>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(5, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<5, T>>
        where
            T: ::planus::WriteAsOffset<self::Bernoulli>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<6, T>>
        where
            T: ::planus::WriteAsOffset<self::Beta>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(6, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<6, T>>
        where
            T: ::planus::WriteAsOffset<self::Beta>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<7, T>>
        where
            T: ::planus::WriteAsOffset<self::Exponential>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(7, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<7, T>>
        where
            T: ::planus::WriteAsOffset<self::Exponential>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<8, T>>
        where
            T: ::planus::WriteAsOffset<self::Gamma>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(8, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<8, T>>
        where
            T: ::planus::WriteAsOffset<self::Gamma>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<9, T>>
        where
            T: ::planus::WriteAsOffset<self::LogNormal>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(9, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<9, T>>
        where
            T: ::planus::WriteAsOffset<self::LogNormal>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<10, T>>
        where
            T: ::planus::WriteAsOffset<self::Binomial>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(10, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<10, T>>
        where
            T: ::planus::WriteAsOffset<self::Binomial>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }
        impl<T> ::planus::WriteAsUnion<Distribution> for DistributionBuilder<::planus::Initialized<11, T>>
        where
            T: ::planus::WriteAsOffset<self::Weibull>,
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::UnionOffset<Distribution> {
                ::planus::UnionOffset::new(11, (self.0).0.prepare(builder).downcast())
            }
        }

        impl<T> ::planus::WriteAsOptionalUnion<Distribution> for DistributionBuilder<::planus::Initialized<11, T>>
        where
            T: ::planus::WriteAsOffset<self::Weibull>,
        {
            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::UnionOffset<Distribution>> {
                ::core::option::Option::Some(::planus::WriteAsUnion::prepare(self, builder))
            }
        }

        /// Reference to a deserialized [Distribution].
        #[derive(Copy, Clone, Debug)]
        pub enum DistributionRef<'a> {
            Normal(self::NormalRef<'a>),
            Uniform(self::UniformRef<'a>),
            Categorical(self::CategoricalRef<'a>),
            Poisson(self::PoissonRef<'a>),
            Bernoulli(self::BernoulliRef<'a>),
            Beta(self::BetaRef<'a>),
            Exponential(self::ExponentialRef<'a>),
            Gamma(self::GammaRef<'a>),
            LogNormal(self::LogNormalRef<'a>),
            Binomial(self::BinomialRef<'a>),
            Weibull(self::WeibullRef<'a>),
        }

        impl<'a> ::core::convert::TryFrom<DistributionRef<'a>> for Distribution {
            type Error = ::planus::Error;

            fn try_from(value: DistributionRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(match value {
                    DistributionRef::Normal(value) => {
                        Self::Normal(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Uniform(value) => {
                        Self::Uniform(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Categorical(value) => {
                        Self::Categorical(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Poisson(value) => {
                        Self::Poisson(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Bernoulli(value) => {
                        Self::Bernoulli(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Beta(value) => {
                        Self::Beta(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Exponential(value) => {
                        Self::Exponential(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Gamma(value) => {
                        Self::Gamma(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::LogNormal(value) => {
                        Self::LogNormal(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Binomial(value) => {
                        Self::Binomial(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }

                    DistributionRef::Weibull(value) => {
                        Self::Weibull(::planus::alloc::boxed::Box::new(::core::convert::TryFrom::try_from(value)?))
                    }
                })
            }
        }

        impl<'a> ::planus::TableReadUnion<'a> for DistributionRef<'a> {
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                tag: u8,
                field_offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                match tag {
                    1 => ::core::result::Result::Ok(Self::Normal(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    2 => ::core::result::Result::Ok(Self::Uniform(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    3 => ::core::result::Result::Ok(Self::Categorical(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    4 => ::core::result::Result::Ok(Self::Poisson(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    5 => ::core::result::Result::Ok(Self::Bernoulli(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    6 => {
                        ::core::result::Result::Ok(Self::Beta(::planus::TableRead::from_buffer(buffer, field_offset)?))
                    }
                    7 => ::core::result::Result::Ok(Self::Exponential(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    8 => {
                        ::core::result::Result::Ok(Self::Gamma(::planus::TableRead::from_buffer(buffer, field_offset)?))
                    }
                    9 => ::core::result::Result::Ok(Self::LogNormal(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    10 => ::core::result::Result::Ok(Self::Binomial(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    11 => ::core::result::Result::Ok(Self::Weibull(::planus::TableRead::from_buffer(
                        buffer,
                        field_offset,
                    )?)),
                    _ => ::core::result::Result::Err(::planus::errors::ErrorKind::UnknownUnionTag { tag }),
                }
            }
        }

        impl<'a> ::planus::VectorReadUnion<'a> for DistributionRef<'a> {
            const VECTOR_NAME: &'static str = "[DistributionRef]";
        }

        /// The table `Handshake` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Handshake` in the file `schema/ppx.fbs:46`
        #[derive(Clone, Debug, PartialEq, PartialOrd, Eq, Ord, Hash, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Handshake {
            /// The field `system_name` in the table `Handshake`
            pub system_name: ::core::option::Option<::planus::alloc::string::String>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Handshake {
            fn default() -> Self {
                Self { system_name: ::core::default::Default::default() }
            }
        }

        impl Handshake {
            /// Creates a [HandshakeBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> HandshakeBuilder<()> {
                HandshakeBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_system_name: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            ) -> ::planus::Offset<Self> {
                let prepared_system_name = field_system_name.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<6> = ::core::default::Default::default();
                if prepared_system_name.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_system_name) = prepared_system_name {
                            object_writer.write::<_, _, 4>(&prepared_system_name);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Handshake>> for Handshake {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Handshake> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Handshake>> for Handshake {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Handshake>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Handshake> for Handshake {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Handshake> {
                Handshake::create(builder, &self.system_name)
            }
        }

        /// Builder for serializing an instance of the [Handshake] type.
        ///
        /// Can be created using the [Handshake::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct HandshakeBuilder<State>(State);

        impl HandshakeBuilder<()> {
            /// Setter for the [`system_name` field](Handshake#structfield.system_name).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn system_name<T0>(self, value: T0) -> HandshakeBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                HandshakeBuilder((value,))
            }

            /// Sets the [`system_name` field](Handshake#structfield.system_name) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn system_name_as_null(self) -> HandshakeBuilder<((),)> {
                self.system_name(())
            }
        }

        impl<T0> HandshakeBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Handshake].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Handshake>
            where
                Self: ::planus::WriteAsOffset<Handshake>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>>
            ::planus::WriteAs<::planus::Offset<Handshake>> for HandshakeBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Handshake>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Handshake> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>>
            ::planus::WriteAsOptional<::planus::Offset<Handshake>> for HandshakeBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Handshake>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Handshake>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>> ::planus::WriteAsOffset<Handshake>
            for HandshakeBuilder<(T0,)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Handshake> {
                let (v0,) = &self.0;
                Handshake::create(builder, v0)
            }
        }

        /// Reference to a deserialized [Handshake].
        #[derive(Copy, Clone)]
        pub struct HandshakeRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> HandshakeRef<'a> {
            /// Getter for the [`system_name` field](Handshake#structfield.system_name).
            #[inline]
            pub fn system_name(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(0, "Handshake", "system_name")
            }
        }

        impl<'a> ::core::fmt::Debug for HandshakeRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("HandshakeRef");
                if let ::core::option::Option::Some(field_system_name) = self.system_name().transpose() {
                    f.field("system_name", &field_system_name);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<HandshakeRef<'a>> for Handshake {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: HandshakeRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self { system_name: value.system_name()?.map(::core::convert::Into::into) })
            }
        }

        impl<'a> ::planus::TableRead<'a> for HandshakeRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for HandshakeRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[HandshakeRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Handshake>> for Handshake {
            type Value = ::planus::Offset<Handshake>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Handshake>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for HandshakeRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[HandshakeRef]", "read_as_root", 0))
            }
        }

        /// The table `HandshakeResult` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `HandshakeResult` in the file `schema/ppx.fbs:50`
        #[derive(Clone, Debug, PartialEq, PartialOrd, Eq, Ord, Hash, ::serde::Serialize, ::serde::Deserialize)]
        pub struct HandshakeResult {
            /// The field `system_name` in the table `HandshakeResult`
            pub system_name: ::core::option::Option<::planus::alloc::string::String>,
            /// The field `model_name` in the table `HandshakeResult`
            pub model_name: ::core::option::Option<::planus::alloc::string::String>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for HandshakeResult {
            fn default() -> Self {
                Self {
                    system_name: ::core::default::Default::default(),
                    model_name: ::core::default::Default::default(),
                }
            }
        }

        impl HandshakeResult {
            /// Creates a [HandshakeResultBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> HandshakeResultBuilder<()> {
                HandshakeResultBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_system_name: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
                field_model_name: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            ) -> ::planus::Offset<Self> {
                let prepared_system_name = field_system_name.prepare(builder);
                let prepared_model_name = field_model_name.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_system_name.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(0);
                }
                if prepared_model_name.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_system_name) = prepared_system_name {
                            object_writer.write::<_, _, 4>(&prepared_system_name);
                        }
                        if let ::core::option::Option::Some(prepared_model_name) = prepared_model_name {
                            object_writer.write::<_, _, 4>(&prepared_model_name);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<HandshakeResult>> for HandshakeResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<HandshakeResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<HandshakeResult>> for HandshakeResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<HandshakeResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<HandshakeResult> for HandshakeResult {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<HandshakeResult> {
                HandshakeResult::create(builder, &self.system_name, &self.model_name)
            }
        }

        /// Builder for serializing an instance of the [HandshakeResult] type.
        ///
        /// Can be created using the [HandshakeResult::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct HandshakeResultBuilder<State>(State);

        impl HandshakeResultBuilder<()> {
            /// Setter for the [`system_name` field](HandshakeResult#structfield.system_name).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn system_name<T0>(self, value: T0) -> HandshakeResultBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                HandshakeResultBuilder((value,))
            }

            /// Sets the [`system_name` field](HandshakeResult#structfield.system_name) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn system_name_as_null(self) -> HandshakeResultBuilder<((),)> {
                self.system_name(())
            }
        }

        impl<T0> HandshakeResultBuilder<(T0,)> {
            /// Setter for the [`model_name` field](HandshakeResult#structfield.model_name).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn model_name<T1>(self, value: T1) -> HandshakeResultBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                let (v0,) = self.0;
                HandshakeResultBuilder((v0, value))
            }

            /// Sets the [`model_name` field](HandshakeResult#structfield.model_name) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn model_name_as_null(self) -> HandshakeResultBuilder<(T0, ())> {
                self.model_name(())
            }
        }

        impl<T0, T1> HandshakeResultBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [HandshakeResult].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<HandshakeResult>
            where
                Self: ::planus::WriteAsOffset<HandshakeResult>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
        > ::planus::WriteAs<::planus::Offset<HandshakeResult>> for HandshakeResultBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<HandshakeResult>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<HandshakeResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
        > ::planus::WriteAsOptional<::planus::Offset<HandshakeResult>> for HandshakeResultBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<HandshakeResult>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<HandshakeResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
        > ::planus::WriteAsOffset<HandshakeResult> for HandshakeResultBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<HandshakeResult> {
                let (v0, v1) = &self.0;
                HandshakeResult::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [HandshakeResult].
        #[derive(Copy, Clone)]
        pub struct HandshakeResultRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> HandshakeResultRef<'a> {
            /// Getter for the [`system_name` field](HandshakeResult#structfield.system_name).
            #[inline]
            pub fn system_name(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(0, "HandshakeResult", "system_name")
            }

            /// Getter for the [`model_name` field](HandshakeResult#structfield.model_name).
            #[inline]
            pub fn model_name(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(1, "HandshakeResult", "model_name")
            }
        }

        impl<'a> ::core::fmt::Debug for HandshakeResultRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("HandshakeResultRef");
                if let ::core::option::Option::Some(field_system_name) = self.system_name().transpose() {
                    f.field("system_name", &field_system_name);
                }
                if let ::core::option::Option::Some(field_model_name) = self.model_name().transpose() {
                    f.field("model_name", &field_model_name);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<HandshakeResultRef<'a>> for HandshakeResult {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: HandshakeResultRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    system_name: value.system_name()?.map(::core::convert::Into::into),
                    model_name: value.model_name()?.map(::core::convert::Into::into),
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for HandshakeResultRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for HandshakeResultRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[HandshakeResultRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<HandshakeResult>> for HandshakeResult {
            type Value = ::planus::Offset<HandshakeResult>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<HandshakeResult>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for HandshakeResultRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[HandshakeResultRef]", "read_as_root", 0))
            }
        }

        /// The table `Run` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Run` in the file `schema/ppx.fbs:55`
        #[derive(Clone, Debug, PartialEq, PartialOrd, Eq, Ord, Hash, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Run {}

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Run {
            fn default() -> Self {
                Self {}
            }
        }

        impl Run {
            /// Creates a [RunBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> RunBuilder<()> {
                RunBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(builder: &mut ::planus::Builder) -> ::planus::Offset<Self> {
                let table_writer: ::planus::table_writer::TableWriter<4> = ::core::default::Default::default();
                unsafe {
                    table_writer.finish(builder, |_table_writer| {});
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Run>> for Run {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Run> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Run>> for Run {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Run>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Run> for Run {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Run> {
                Run::create(builder)
            }
        }

        /// Builder for serializing an instance of the [Run] type.
        ///
        /// Can be created using the [Run::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct RunBuilder<State>(State);

        impl RunBuilder<()> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Run].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Run>
            where
                Self: ::planus::WriteAsOffset<Run>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Run>> for RunBuilder<()> {
            type Prepared = ::planus::Offset<Run>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Run> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Run>> for RunBuilder<()> {
            type Prepared = ::planus::Offset<Run>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Run>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Run> for RunBuilder<()> {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Run> {
                Run::create(builder)
            }
        }

        /// Reference to a deserialized [Run].
        #[derive(Copy, Clone)]
        pub struct RunRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> RunRef<'a> {}

        impl<'a> ::core::fmt::Debug for RunRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("RunRef");

                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<RunRef<'a>> for Run {
            type Error = ::planus::Error;

            fn try_from(_value: RunRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {})
            }
        }

        impl<'a> ::planus::TableRead<'a> for RunRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for RunRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset)
                    .map_err(|error_kind| error_kind.with_error_location("[RunRef]", "get", buffer.offset_from_start))
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Run>> for Run {
            type Value = ::planus::Offset<Run>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Run>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for RunRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[RunRef]", "read_as_root", 0))
            }
        }

        /// The table `RunResult` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `RunResult` in the file `schema/ppx.fbs:57`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct RunResult {
            /// The field `result` in the table `RunResult`
            pub result: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for RunResult {
            fn default() -> Self {
                Self { result: ::core::default::Default::default() }
            }
        }

        impl RunResult {
            /// Creates a [RunResultBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> RunResultBuilder<()> {
                RunResultBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_result: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_result = field_result.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<6> = ::core::default::Default::default();
                if prepared_result.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_result) = prepared_result {
                            object_writer.write::<_, _, 4>(&prepared_result);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<RunResult>> for RunResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<RunResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<RunResult>> for RunResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<RunResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<RunResult> for RunResult {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<RunResult> {
                RunResult::create(builder, &self.result)
            }
        }

        /// Builder for serializing an instance of the [RunResult] type.
        ///
        /// Can be created using the [RunResult::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct RunResultBuilder<State>(State);

        impl RunResultBuilder<()> {
            /// Setter for the [`result` field](RunResult#structfield.result).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn result<T0>(self, value: T0) -> RunResultBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                RunResultBuilder((value,))
            }

            /// Sets the [`result` field](RunResult#structfield.result) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn result_as_null(self) -> RunResultBuilder<((),)> {
                self.result(())
            }
        }

        impl<T0> RunResultBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [RunResult].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<RunResult>
            where
                Self: ::planus::WriteAsOffset<RunResult>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAs<::planus::Offset<RunResult>> for RunResultBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<RunResult>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<RunResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAsOptional<::planus::Offset<RunResult>> for RunResultBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<RunResult>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<RunResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>> ::planus::WriteAsOffset<RunResult>
            for RunResultBuilder<(T0,)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<RunResult> {
                let (v0,) = &self.0;
                RunResult::create(builder, v0)
            }
        }

        /// Reference to a deserialized [RunResult].
        #[derive(Copy, Clone)]
        pub struct RunResultRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> RunResultRef<'a> {
            /// Getter for the [`result` field](RunResult#structfield.result).
            #[inline]
            pub fn result(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "RunResult", "result")
            }
        }

        impl<'a> ::core::fmt::Debug for RunResultRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("RunResultRef");
                if let ::core::option::Option::Some(field_result) = self.result().transpose() {
                    f.field("result", &field_result);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<RunResultRef<'a>> for RunResult {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: RunResultRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    result: if let ::core::option::Option::Some(result) = value.result()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(result)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for RunResultRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for RunResultRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[RunResultRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<RunResult>> for RunResult {
            type Value = ::planus::Offset<RunResult>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<RunResult>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for RunResultRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[RunResultRef]", "read_as_root", 0))
            }
        }

        /// The table `Sample` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Sample` in the file `schema/ppx.fbs:61`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Sample {
            /// The field `address` in the table `Sample`
            pub address: ::core::option::Option<::planus::alloc::string::String>,
            /// The field `name` in the table `Sample`
            pub name: ::core::option::Option<::planus::alloc::string::String>,
            /// The field `distribution` in the table `Sample`
            pub distribution: ::core::option::Option<self::Distribution>,
            /// The field `control` in the table `Sample`
            pub control: bool,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Sample {
            fn default() -> Self {
                Self {
                    address: ::core::default::Default::default(),
                    name: ::core::default::Default::default(),
                    distribution: ::core::default::Default::default(),
                    control: true,
                }
            }
        }

        impl Sample {
            /// Creates a [SampleBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> SampleBuilder<()> {
                SampleBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_address: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
                field_name: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
                field_distribution: impl ::planus::WriteAsOptionalUnion<self::Distribution>,
                field_control: impl ::planus::WriteAsDefault<bool, bool>,
            ) -> ::planus::Offset<Self> {
                let prepared_address = field_address.prepare(builder);
                let prepared_name = field_name.prepare(builder);
                let prepared_distribution = field_distribution.prepare(builder);
                let prepared_control = field_control.prepare(builder, &true);

                let mut table_writer: ::planus::table_writer::TableWriter<14> = ::core::default::Default::default();
                if prepared_address.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(0);
                }
                if prepared_name.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(1);
                }
                if prepared_distribution.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Distribution>>(3);
                }
                if prepared_distribution.is_some() {
                    table_writer.write_entry::<u8>(2);
                }
                if prepared_control.is_some() {
                    table_writer.write_entry::<bool>(4);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_address) = prepared_address {
                            object_writer.write::<_, _, 4>(&prepared_address);
                        }
                        if let ::core::option::Option::Some(prepared_name) = prepared_name {
                            object_writer.write::<_, _, 4>(&prepared_name);
                        }
                        if let ::core::option::Option::Some(prepared_distribution) = prepared_distribution {
                            object_writer.write::<_, _, 4>(&prepared_distribution.offset());
                        }
                        if let ::core::option::Option::Some(prepared_distribution) = prepared_distribution {
                            object_writer.write::<_, _, 1>(&prepared_distribution.tag());
                        }
                        if let ::core::option::Option::Some(prepared_control) = prepared_control {
                            object_writer.write::<_, _, 1>(&prepared_control);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Sample>> for Sample {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Sample> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Sample>> for Sample {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Sample>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Sample> for Sample {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Sample> {
                Sample::create(builder, &self.address, &self.name, &self.distribution, self.control)
            }
        }

        /// Builder for serializing an instance of the [Sample] type.
        ///
        /// Can be created using the [Sample::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct SampleBuilder<State>(State);

        impl SampleBuilder<()> {
            /// Setter for the [`address` field](Sample#structfield.address).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn address<T0>(self, value: T0) -> SampleBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                SampleBuilder((value,))
            }

            /// Sets the [`address` field](Sample#structfield.address) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn address_as_null(self) -> SampleBuilder<((),)> {
                self.address(())
            }
        }

        impl<T0> SampleBuilder<(T0,)> {
            /// Setter for the [`name` field](Sample#structfield.name).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn name<T1>(self, value: T1) -> SampleBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                let (v0,) = self.0;
                SampleBuilder((v0, value))
            }

            /// Sets the [`name` field](Sample#structfield.name) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn name_as_null(self) -> SampleBuilder<(T0, ())> {
                self.name(())
            }
        }

        impl<T0, T1> SampleBuilder<(T0, T1)> {
            /// Setter for the [`distribution` field](Sample#structfield.distribution).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn distribution<T2>(self, value: T2) -> SampleBuilder<(T0, T1, T2)>
            where
                T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            {
                let (v0, v1) = self.0;
                SampleBuilder((v0, v1, value))
            }

            /// Sets the [`distribution` field](Sample#structfield.distribution) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn distribution_as_null(self) -> SampleBuilder<(T0, T1, ())> {
                self.distribution(())
            }
        }

        impl<T0, T1, T2> SampleBuilder<(T0, T1, T2)> {
            /// Setter for the [`control` field](Sample#structfield.control).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn control<T3>(self, value: T3) -> SampleBuilder<(T0, T1, T2, T3)>
            where
                T3: ::planus::WriteAsDefault<bool, bool>,
            {
                let (v0, v1, v2) = self.0;
                SampleBuilder((v0, v1, v2, value))
            }

            /// Sets the [`control` field](Sample#structfield.control) to the default value.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn control_as_default(self) -> SampleBuilder<(T0, T1, T2, ::planus::DefaultValue)> {
                self.control(::planus::DefaultValue)
            }
        }

        impl<T0, T1, T2, T3> SampleBuilder<(T0, T1, T2, T3)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Sample].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Sample>
            where
                Self: ::planus::WriteAsOffset<Sample>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            T3: ::planus::WriteAsDefault<bool, bool>,
        > ::planus::WriteAs<::planus::Offset<Sample>> for SampleBuilder<(T0, T1, T2, T3)>
        {
            type Prepared = ::planus::Offset<Sample>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Sample> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            T3: ::planus::WriteAsDefault<bool, bool>,
        > ::planus::WriteAsOptional<::planus::Offset<Sample>> for SampleBuilder<(T0, T1, T2, T3)>
        {
            type Prepared = ::planus::Offset<Sample>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Sample>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            T3: ::planus::WriteAsDefault<bool, bool>,
        > ::planus::WriteAsOffset<Sample> for SampleBuilder<(T0, T1, T2, T3)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Sample> {
                let (v0, v1, v2, v3) = &self.0;
                Sample::create(builder, v0, v1, v2, v3)
            }
        }

        /// Reference to a deserialized [Sample].
        #[derive(Copy, Clone)]
        pub struct SampleRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> SampleRef<'a> {
            /// Getter for the [`address` field](Sample#structfield.address).
            #[inline]
            pub fn address(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(0, "Sample", "address")
            }

            /// Getter for the [`name` field](Sample#structfield.name).
            #[inline]
            pub fn name(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(1, "Sample", "name")
            }

            /// Getter for the [`distribution` field](Sample#structfield.distribution).
            #[inline]
            pub fn distribution(&self) -> ::planus::Result<::core::option::Option<self::DistributionRef<'a>>> {
                self.0.access_union(2, "Sample", "distribution")
            }

            /// Getter for the [`control` field](Sample#structfield.control).
            #[inline]
            pub fn control(&self) -> ::planus::Result<bool> {
                ::core::result::Result::Ok(self.0.access(4, "Sample", "control")?.unwrap_or(true))
            }
        }

        impl<'a> ::core::fmt::Debug for SampleRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("SampleRef");
                if let ::core::option::Option::Some(field_address) = self.address().transpose() {
                    f.field("address", &field_address);
                }
                if let ::core::option::Option::Some(field_name) = self.name().transpose() {
                    f.field("name", &field_name);
                }
                if let ::core::option::Option::Some(field_distribution) = self.distribution().transpose() {
                    f.field("distribution", &field_distribution);
                }
                f.field("control", &self.control());
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<SampleRef<'a>> for Sample {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: SampleRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    address: value.address()?.map(::core::convert::Into::into),
                    name: value.name()?.map(::core::convert::Into::into),
                    distribution: if let ::core::option::Option::Some(distribution) = value.distribution()? {
                        ::core::option::Option::Some(::core::convert::TryInto::try_into(distribution)?)
                    } else {
                        ::core::option::Option::None
                    },
                    control: ::core::convert::TryInto::try_into(value.control()?)?,
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for SampleRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for SampleRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[SampleRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Sample>> for Sample {
            type Value = ::planus::Offset<Sample>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Sample>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for SampleRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[SampleRef]", "read_as_root", 0))
            }
        }

        /// The table `SampleResult` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `SampleResult` in the file `schema/ppx.fbs:68`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct SampleResult {
            /// The field `result` in the table `SampleResult`
            pub result: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for SampleResult {
            fn default() -> Self {
                Self { result: ::core::default::Default::default() }
            }
        }

        impl SampleResult {
            /// Creates a [SampleResultBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> SampleResultBuilder<()> {
                SampleResultBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_result: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_result = field_result.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<6> = ::core::default::Default::default();
                if prepared_result.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_result) = prepared_result {
                            object_writer.write::<_, _, 4>(&prepared_result);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<SampleResult>> for SampleResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<SampleResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<SampleResult>> for SampleResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<SampleResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<SampleResult> for SampleResult {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<SampleResult> {
                SampleResult::create(builder, &self.result)
            }
        }

        /// Builder for serializing an instance of the [SampleResult] type.
        ///
        /// Can be created using the [SampleResult::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct SampleResultBuilder<State>(State);

        impl SampleResultBuilder<()> {
            /// Setter for the [`result` field](SampleResult#structfield.result).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn result<T0>(self, value: T0) -> SampleResultBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                SampleResultBuilder((value,))
            }

            /// Sets the [`result` field](SampleResult#structfield.result) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn result_as_null(self) -> SampleResultBuilder<((),)> {
                self.result(())
            }
        }

        impl<T0> SampleResultBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [SampleResult].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<SampleResult>
            where
                Self: ::planus::WriteAsOffset<SampleResult>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAs<::planus::Offset<SampleResult>> for SampleResultBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<SampleResult>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<SampleResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAsOptional<::planus::Offset<SampleResult>> for SampleResultBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<SampleResult>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<SampleResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>> ::planus::WriteAsOffset<SampleResult>
            for SampleResultBuilder<(T0,)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<SampleResult> {
                let (v0,) = &self.0;
                SampleResult::create(builder, v0)
            }
        }

        /// Reference to a deserialized [SampleResult].
        #[derive(Copy, Clone)]
        pub struct SampleResultRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> SampleResultRef<'a> {
            /// Getter for the [`result` field](SampleResult#structfield.result).
            #[inline]
            pub fn result(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "SampleResult", "result")
            }
        }

        impl<'a> ::core::fmt::Debug for SampleResultRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("SampleResultRef");
                if let ::core::option::Option::Some(field_result) = self.result().transpose() {
                    f.field("result", &field_result);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<SampleResultRef<'a>> for SampleResult {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: SampleResultRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    result: if let ::core::option::Option::Some(result) = value.result()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(result)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for SampleResultRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for SampleResultRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[SampleResultRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<SampleResult>> for SampleResult {
            type Value = ::planus::Offset<SampleResult>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<SampleResult>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for SampleResultRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[SampleResultRef]", "read_as_root", 0))
            }
        }

        /// The table `Observe` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Observe` in the file `schema/ppx.fbs:72`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Observe {
            /// The field `address` in the table `Observe`
            pub address: ::core::option::Option<::planus::alloc::string::String>,
            /// The field `name` in the table `Observe`
            pub name: ::core::option::Option<::planus::alloc::string::String>,
            /// The field `distribution` in the table `Observe`
            pub distribution: ::core::option::Option<self::Distribution>,
            /// The field `value` in the table `Observe`
            pub value: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Observe {
            fn default() -> Self {
                Self {
                    address: ::core::default::Default::default(),
                    name: ::core::default::Default::default(),
                    distribution: ::core::default::Default::default(),
                    value: ::core::default::Default::default(),
                }
            }
        }

        impl Observe {
            /// Creates a [ObserveBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> ObserveBuilder<()> {
                ObserveBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_address: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
                field_name: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
                field_distribution: impl ::planus::WriteAsOptionalUnion<self::Distribution>,
                field_value: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_address = field_address.prepare(builder);
                let prepared_name = field_name.prepare(builder);
                let prepared_distribution = field_distribution.prepare(builder);
                let prepared_value = field_value.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<14> = ::core::default::Default::default();
                if prepared_address.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(0);
                }
                if prepared_name.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(1);
                }
                if prepared_distribution.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Distribution>>(3);
                }
                if prepared_value.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(4);
                }
                if prepared_distribution.is_some() {
                    table_writer.write_entry::<u8>(2);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_address) = prepared_address {
                            object_writer.write::<_, _, 4>(&prepared_address);
                        }
                        if let ::core::option::Option::Some(prepared_name) = prepared_name {
                            object_writer.write::<_, _, 4>(&prepared_name);
                        }
                        if let ::core::option::Option::Some(prepared_distribution) = prepared_distribution {
                            object_writer.write::<_, _, 4>(&prepared_distribution.offset());
                        }
                        if let ::core::option::Option::Some(prepared_value) = prepared_value {
                            object_writer.write::<_, _, 4>(&prepared_value);
                        }
                        if let ::core::option::Option::Some(prepared_distribution) = prepared_distribution {
                            object_writer.write::<_, _, 1>(&prepared_distribution.tag());
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Observe>> for Observe {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Observe> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Observe>> for Observe {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Observe>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Observe> for Observe {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Observe> {
                Observe::create(builder, &self.address, &self.name, &self.distribution, &self.value)
            }
        }

        /// Builder for serializing an instance of the [Observe] type.
        ///
        /// Can be created using the [Observe::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct ObserveBuilder<State>(State);

        impl ObserveBuilder<()> {
            /// Setter for the [`address` field](Observe#structfield.address).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn address<T0>(self, value: T0) -> ObserveBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                ObserveBuilder((value,))
            }

            /// Sets the [`address` field](Observe#structfield.address) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn address_as_null(self) -> ObserveBuilder<((),)> {
                self.address(())
            }
        }

        impl<T0> ObserveBuilder<(T0,)> {
            /// Setter for the [`name` field](Observe#structfield.name).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn name<T1>(self, value: T1) -> ObserveBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                let (v0,) = self.0;
                ObserveBuilder((v0, value))
            }

            /// Sets the [`name` field](Observe#structfield.name) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn name_as_null(self) -> ObserveBuilder<(T0, ())> {
                self.name(())
            }
        }

        impl<T0, T1> ObserveBuilder<(T0, T1)> {
            /// Setter for the [`distribution` field](Observe#structfield.distribution).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn distribution<T2>(self, value: T2) -> ObserveBuilder<(T0, T1, T2)>
            where
                T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            {
                let (v0, v1) = self.0;
                ObserveBuilder((v0, v1, value))
            }

            /// Sets the [`distribution` field](Observe#structfield.distribution) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn distribution_as_null(self) -> ObserveBuilder<(T0, T1, ())> {
                self.distribution(())
            }
        }

        impl<T0, T1, T2> ObserveBuilder<(T0, T1, T2)> {
            /// Setter for the [`value` field](Observe#structfield.value).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn value<T3>(self, value: T3) -> ObserveBuilder<(T0, T1, T2, T3)>
            where
                T3: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0, v1, v2) = self.0;
                ObserveBuilder((v0, v1, v2, value))
            }

            /// Sets the [`value` field](Observe#structfield.value) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn value_as_null(self) -> ObserveBuilder<(T0, T1, T2, ())> {
                self.value(())
            }
        }

        impl<T0, T1, T2, T3> ObserveBuilder<(T0, T1, T2, T3)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Observe].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Observe>
            where
                Self: ::planus::WriteAsOffset<Observe>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            T3: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Observe>> for ObserveBuilder<(T0, T1, T2, T3)>
        {
            type Prepared = ::planus::Offset<Observe>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Observe> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            T3: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Observe>> for ObserveBuilder<(T0, T1, T2, T3)>
        {
            type Prepared = ::planus::Offset<Observe>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Observe>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptionalUnion<self::Distribution>,
            T3: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Observe> for ObserveBuilder<(T0, T1, T2, T3)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Observe> {
                let (v0, v1, v2, v3) = &self.0;
                Observe::create(builder, v0, v1, v2, v3)
            }
        }

        /// Reference to a deserialized [Observe].
        #[derive(Copy, Clone)]
        pub struct ObserveRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> ObserveRef<'a> {
            /// Getter for the [`address` field](Observe#structfield.address).
            #[inline]
            pub fn address(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(0, "Observe", "address")
            }

            /// Getter for the [`name` field](Observe#structfield.name).
            #[inline]
            pub fn name(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(1, "Observe", "name")
            }

            /// Getter for the [`distribution` field](Observe#structfield.distribution).
            #[inline]
            pub fn distribution(&self) -> ::planus::Result<::core::option::Option<self::DistributionRef<'a>>> {
                self.0.access_union(2, "Observe", "distribution")
            }

            /// Getter for the [`value` field](Observe#structfield.value).
            #[inline]
            pub fn value(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(4, "Observe", "value")
            }
        }

        impl<'a> ::core::fmt::Debug for ObserveRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("ObserveRef");
                if let ::core::option::Option::Some(field_address) = self.address().transpose() {
                    f.field("address", &field_address);
                }
                if let ::core::option::Option::Some(field_name) = self.name().transpose() {
                    f.field("name", &field_name);
                }
                if let ::core::option::Option::Some(field_distribution) = self.distribution().transpose() {
                    f.field("distribution", &field_distribution);
                }
                if let ::core::option::Option::Some(field_value) = self.value().transpose() {
                    f.field("value", &field_value);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<ObserveRef<'a>> for Observe {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: ObserveRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    address: value.address()?.map(::core::convert::Into::into),
                    name: value.name()?.map(::core::convert::Into::into),
                    distribution: if let ::core::option::Option::Some(distribution) = value.distribution()? {
                        ::core::option::Option::Some(::core::convert::TryInto::try_into(distribution)?)
                    } else {
                        ::core::option::Option::None
                    },
                    value: if let ::core::option::Option::Some(value) = value.value()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(value)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for ObserveRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for ObserveRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[ObserveRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Observe>> for Observe {
            type Value = ::planus::Offset<Observe>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Observe>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for ObserveRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[ObserveRef]", "read_as_root", 0))
            }
        }

        /// The table `ObserveResult` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `ObserveResult` in the file `schema/ppx.fbs:79`
        #[derive(Clone, Debug, PartialEq, PartialOrd, Eq, Ord, Hash, ::serde::Serialize, ::serde::Deserialize)]
        pub struct ObserveResult {}

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for ObserveResult {
            fn default() -> Self {
                Self {}
            }
        }

        impl ObserveResult {
            /// Creates a [ObserveResultBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> ObserveResultBuilder<()> {
                ObserveResultBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(builder: &mut ::planus::Builder) -> ::planus::Offset<Self> {
                let table_writer: ::planus::table_writer::TableWriter<4> = ::core::default::Default::default();
                unsafe {
                    table_writer.finish(builder, |_table_writer| {});
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<ObserveResult>> for ObserveResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<ObserveResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<ObserveResult>> for ObserveResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<ObserveResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<ObserveResult> for ObserveResult {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<ObserveResult> {
                ObserveResult::create(builder)
            }
        }

        /// Builder for serializing an instance of the [ObserveResult] type.
        ///
        /// Can be created using the [ObserveResult::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct ObserveResultBuilder<State>(State);

        impl ObserveResultBuilder<()> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [ObserveResult].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<ObserveResult>
            where
                Self: ::planus::WriteAsOffset<ObserveResult>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl ::planus::WriteAs<::planus::Offset<ObserveResult>> for ObserveResultBuilder<()> {
            type Prepared = ::planus::Offset<ObserveResult>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<ObserveResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<ObserveResult>> for ObserveResultBuilder<()> {
            type Prepared = ::planus::Offset<ObserveResult>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<ObserveResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<ObserveResult> for ObserveResultBuilder<()> {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<ObserveResult> {
                ObserveResult::create(builder)
            }
        }

        /// Reference to a deserialized [ObserveResult].
        #[derive(Copy, Clone)]
        pub struct ObserveResultRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> ObserveResultRef<'a> {}

        impl<'a> ::core::fmt::Debug for ObserveResultRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("ObserveResultRef");

                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<ObserveResultRef<'a>> for ObserveResult {
            type Error = ::planus::Error;

            fn try_from(_value: ObserveResultRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {})
            }
        }

        impl<'a> ::planus::TableRead<'a> for ObserveResultRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for ObserveResultRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[ObserveResultRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<ObserveResult>> for ObserveResult {
            type Value = ::planus::Offset<ObserveResult>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<ObserveResult>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for ObserveResultRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[ObserveResultRef]", "read_as_root", 0))
            }
        }

        /// The table `Tag` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Tag` in the file `schema/ppx.fbs:81`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Tag {
            /// The field `address` in the table `Tag`
            pub address: ::core::option::Option<::planus::alloc::string::String>,
            /// The field `name` in the table `Tag`
            pub name: ::core::option::Option<::planus::alloc::string::String>,
            /// The field `value` in the table `Tag`
            pub value: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Tag {
            fn default() -> Self {
                Self {
                    address: ::core::default::Default::default(),
                    name: ::core::default::Default::default(),
                    value: ::core::default::Default::default(),
                }
            }
        }

        impl Tag {
            /// Creates a [TagBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> TagBuilder<()> {
                TagBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_address: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
                field_name: impl ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
                field_value: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_address = field_address.prepare(builder);
                let prepared_name = field_name.prepare(builder);
                let prepared_value = field_value.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<10> = ::core::default::Default::default();
                if prepared_address.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(0);
                }
                if prepared_name.is_some() {
                    table_writer.write_entry::<::planus::Offset<str>>(1);
                }
                if prepared_value.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(2);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_address) = prepared_address {
                            object_writer.write::<_, _, 4>(&prepared_address);
                        }
                        if let ::core::option::Option::Some(prepared_name) = prepared_name {
                            object_writer.write::<_, _, 4>(&prepared_name);
                        }
                        if let ::core::option::Option::Some(prepared_value) = prepared_value {
                            object_writer.write::<_, _, 4>(&prepared_value);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Tag>> for Tag {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tag> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Tag>> for Tag {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Tag>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Tag> for Tag {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tag> {
                Tag::create(builder, &self.address, &self.name, &self.value)
            }
        }

        /// Builder for serializing an instance of the [Tag] type.
        ///
        /// Can be created using the [Tag::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct TagBuilder<State>(State);

        impl TagBuilder<()> {
            /// Setter for the [`address` field](Tag#structfield.address).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn address<T0>(self, value: T0) -> TagBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                TagBuilder((value,))
            }

            /// Sets the [`address` field](Tag#structfield.address) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn address_as_null(self) -> TagBuilder<((),)> {
                self.address(())
            }
        }

        impl<T0> TagBuilder<(T0,)> {
            /// Setter for the [`name` field](Tag#structfield.name).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn name<T1>(self, value: T1) -> TagBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            {
                let (v0,) = self.0;
                TagBuilder((v0, value))
            }

            /// Sets the [`name` field](Tag#structfield.name) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn name_as_null(self) -> TagBuilder<(T0, ())> {
                self.name(())
            }
        }

        impl<T0, T1> TagBuilder<(T0, T1)> {
            /// Setter for the [`value` field](Tag#structfield.value).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn value<T2>(self, value: T2) -> TagBuilder<(T0, T1, T2)>
            where
                T2: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0, v1) = self.0;
                TagBuilder((v0, v1, value))
            }

            /// Sets the [`value` field](Tag#structfield.value) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn value_as_null(self) -> TagBuilder<(T0, T1, ())> {
                self.value(())
            }
        }

        impl<T0, T1, T2> TagBuilder<(T0, T1, T2)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Tag].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tag>
            where
                Self: ::planus::WriteAsOffset<Tag>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Tag>> for TagBuilder<(T0, T1, T2)>
        {
            type Prepared = ::planus::Offset<Tag>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tag> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Tag>> for TagBuilder<(T0, T1, T2)>
        {
            type Prepared = ::planus::Offset<Tag>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Tag>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<::core::primitive::str>>,
            T2: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Tag> for TagBuilder<(T0, T1, T2)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Tag> {
                let (v0, v1, v2) = &self.0;
                Tag::create(builder, v0, v1, v2)
            }
        }

        /// Reference to a deserialized [Tag].
        #[derive(Copy, Clone)]
        pub struct TagRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> TagRef<'a> {
            /// Getter for the [`address` field](Tag#structfield.address).
            #[inline]
            pub fn address(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(0, "Tag", "address")
            }

            /// Getter for the [`name` field](Tag#structfield.name).
            #[inline]
            pub fn name(&self) -> ::planus::Result<::core::option::Option<&'a ::core::primitive::str>> {
                self.0.access(1, "Tag", "name")
            }

            /// Getter for the [`value` field](Tag#structfield.value).
            #[inline]
            pub fn value(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(2, "Tag", "value")
            }
        }

        impl<'a> ::core::fmt::Debug for TagRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("TagRef");
                if let ::core::option::Option::Some(field_address) = self.address().transpose() {
                    f.field("address", &field_address);
                }
                if let ::core::option::Option::Some(field_name) = self.name().transpose() {
                    f.field("name", &field_name);
                }
                if let ::core::option::Option::Some(field_value) = self.value().transpose() {
                    f.field("value", &field_value);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<TagRef<'a>> for Tag {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: TagRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    address: value.address()?.map(::core::convert::Into::into),
                    name: value.name()?.map(::core::convert::Into::into),
                    value: if let ::core::option::Option::Some(value) = value.value()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(value)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for TagRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for TagRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset)
                    .map_err(|error_kind| error_kind.with_error_location("[TagRef]", "get", buffer.offset_from_start))
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Tag>> for Tag {
            type Value = ::planus::Offset<Tag>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Tag>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for TagRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[TagRef]", "read_as_root", 0))
            }
        }

        /// The table `TagResult` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `TagResult` in the file `schema/ppx.fbs:87`
        #[derive(Clone, Debug, PartialEq, PartialOrd, Eq, Ord, Hash, ::serde::Serialize, ::serde::Deserialize)]
        pub struct TagResult {}

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for TagResult {
            fn default() -> Self {
                Self {}
            }
        }

        impl TagResult {
            /// Creates a [TagResultBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> TagResultBuilder<()> {
                TagResultBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(builder: &mut ::planus::Builder) -> ::planus::Offset<Self> {
                let table_writer: ::planus::table_writer::TableWriter<4> = ::core::default::Default::default();
                unsafe {
                    table_writer.finish(builder, |_table_writer| {});
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<TagResult>> for TagResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<TagResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<TagResult>> for TagResult {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<TagResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<TagResult> for TagResult {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<TagResult> {
                TagResult::create(builder)
            }
        }

        /// Builder for serializing an instance of the [TagResult] type.
        ///
        /// Can be created using the [TagResult::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct TagResultBuilder<State>(State);

        impl TagResultBuilder<()> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [TagResult].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<TagResult>
            where
                Self: ::planus::WriteAsOffset<TagResult>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl ::planus::WriteAs<::planus::Offset<TagResult>> for TagResultBuilder<()> {
            type Prepared = ::planus::Offset<TagResult>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<TagResult> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<TagResult>> for TagResultBuilder<()> {
            type Prepared = ::planus::Offset<TagResult>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<TagResult>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<TagResult> for TagResultBuilder<()> {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<TagResult> {
                TagResult::create(builder)
            }
        }

        /// Reference to a deserialized [TagResult].
        #[derive(Copy, Clone)]
        pub struct TagResultRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> TagResultRef<'a> {}

        impl<'a> ::core::fmt::Debug for TagResultRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("TagResultRef");

                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<TagResultRef<'a>> for TagResult {
            type Error = ::planus::Error;

            fn try_from(_value: TagResultRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {})
            }
        }

        impl<'a> ::planus::TableRead<'a> for TagResultRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for TagResultRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[TagResultRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<TagResult>> for TagResult {
            type Value = ::planus::Offset<TagResult>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<TagResult>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for TagResultRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[TagResultRef]", "read_as_root", 0))
            }
        }

        /// The table `Reset` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Reset` in the file `schema/ppx.fbs:89`
        #[derive(Clone, Debug, PartialEq, PartialOrd, Eq, Ord, Hash, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Reset {}

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Reset {
            fn default() -> Self {
                Self {}
            }
        }

        impl Reset {
            /// Creates a [ResetBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> ResetBuilder<()> {
                ResetBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(builder: &mut ::planus::Builder) -> ::planus::Offset<Self> {
                let table_writer: ::planus::table_writer::TableWriter<4> = ::core::default::Default::default();
                unsafe {
                    table_writer.finish(builder, |_table_writer| {});
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Reset>> for Reset {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Reset> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Reset>> for Reset {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Reset>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Reset> for Reset {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Reset> {
                Reset::create(builder)
            }
        }

        /// Builder for serializing an instance of the [Reset] type.
        ///
        /// Can be created using the [Reset::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct ResetBuilder<State>(State);

        impl ResetBuilder<()> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Reset].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Reset>
            where
                Self: ::planus::WriteAsOffset<Reset>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Reset>> for ResetBuilder<()> {
            type Prepared = ::planus::Offset<Reset>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Reset> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Reset>> for ResetBuilder<()> {
            type Prepared = ::planus::Offset<Reset>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Reset>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Reset> for ResetBuilder<()> {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Reset> {
                Reset::create(builder)
            }
        }

        /// Reference to a deserialized [Reset].
        #[derive(Copy, Clone)]
        pub struct ResetRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> ResetRef<'a> {}

        impl<'a> ::core::fmt::Debug for ResetRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("ResetRef");

                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<ResetRef<'a>> for Reset {
            type Error = ::planus::Error;

            fn try_from(_value: ResetRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {})
            }
        }

        impl<'a> ::planus::TableRead<'a> for ResetRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for ResetRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset)
                    .map_err(|error_kind| error_kind.with_error_location("[ResetRef]", "get", buffer.offset_from_start))
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Reset>> for Reset {
            type Value = ::planus::Offset<Reset>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Reset>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for ResetRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[ResetRef]", "read_as_root", 0))
            }
        }

        /// The table `Normal` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Normal` in the file `schema/ppx.fbs:91`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Normal {
            /// The field `mean` in the table `Normal`
            pub mean: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
            /// The field `stddev` in the table `Normal`
            pub stddev: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Normal {
            fn default() -> Self {
                Self { mean: ::core::default::Default::default(), stddev: ::core::default::Default::default() }
            }
        }

        impl Normal {
            /// Creates a [NormalBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> NormalBuilder<()> {
                NormalBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_mean: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
                field_stddev: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_mean = field_mean.prepare(builder);
                let prepared_stddev = field_stddev.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_mean.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }
                if prepared_stddev.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_mean) = prepared_mean {
                            object_writer.write::<_, _, 4>(&prepared_mean);
                        }
                        if let ::core::option::Option::Some(prepared_stddev) = prepared_stddev {
                            object_writer.write::<_, _, 4>(&prepared_stddev);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Normal>> for Normal {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Normal> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Normal>> for Normal {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Normal>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Normal> for Normal {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Normal> {
                Normal::create(builder, &self.mean, &self.stddev)
            }
        }

        /// Builder for serializing an instance of the [Normal] type.
        ///
        /// Can be created using the [Normal::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct NormalBuilder<State>(State);

        impl NormalBuilder<()> {
            /// Setter for the [`mean` field](Normal#structfield.mean).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn mean<T0>(self, value: T0) -> NormalBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                NormalBuilder((value,))
            }

            /// Sets the [`mean` field](Normal#structfield.mean) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn mean_as_null(self) -> NormalBuilder<((),)> {
                self.mean(())
            }
        }

        impl<T0> NormalBuilder<(T0,)> {
            /// Setter for the [`stddev` field](Normal#structfield.stddev).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn stddev<T1>(self, value: T1) -> NormalBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0,) = self.0;
                NormalBuilder((v0, value))
            }

            /// Sets the [`stddev` field](Normal#structfield.stddev) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn stddev_as_null(self) -> NormalBuilder<(T0, ())> {
                self.stddev(())
            }
        }

        impl<T0, T1> NormalBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Normal].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Normal>
            where
                Self: ::planus::WriteAsOffset<Normal>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Normal>> for NormalBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Normal>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Normal> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Normal>> for NormalBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Normal>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Normal>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Normal> for NormalBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Normal> {
                let (v0, v1) = &self.0;
                Normal::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [Normal].
        #[derive(Copy, Clone)]
        pub struct NormalRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> NormalRef<'a> {
            /// Getter for the [`mean` field](Normal#structfield.mean).
            #[inline]
            pub fn mean(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Normal", "mean")
            }

            /// Getter for the [`stddev` field](Normal#structfield.stddev).
            #[inline]
            pub fn stddev(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(1, "Normal", "stddev")
            }
        }

        impl<'a> ::core::fmt::Debug for NormalRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("NormalRef");
                if let ::core::option::Option::Some(field_mean) = self.mean().transpose() {
                    f.field("mean", &field_mean);
                }
                if let ::core::option::Option::Some(field_stddev) = self.stddev().transpose() {
                    f.field("stddev", &field_stddev);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<NormalRef<'a>> for Normal {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: NormalRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    mean: if let ::core::option::Option::Some(mean) = value.mean()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(mean)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                    stddev: if let ::core::option::Option::Some(stddev) = value.stddev()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(stddev)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for NormalRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for NormalRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[NormalRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Normal>> for Normal {
            type Value = ::planus::Offset<Normal>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Normal>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for NormalRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[NormalRef]", "read_as_root", 0))
            }
        }

        /// The table `Uniform` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Uniform` in the file `schema/ppx.fbs:96`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Uniform {
            /// The field `low` in the table `Uniform`
            pub low: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
            /// The field `high` in the table `Uniform`
            pub high: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Uniform {
            fn default() -> Self {
                Self { low: ::core::default::Default::default(), high: ::core::default::Default::default() }
            }
        }

        impl Uniform {
            /// Creates a [UniformBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> UniformBuilder<()> {
                UniformBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_low: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
                field_high: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_low = field_low.prepare(builder);
                let prepared_high = field_high.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_low.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }
                if prepared_high.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_low) = prepared_low {
                            object_writer.write::<_, _, 4>(&prepared_low);
                        }
                        if let ::core::option::Option::Some(prepared_high) = prepared_high {
                            object_writer.write::<_, _, 4>(&prepared_high);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Uniform>> for Uniform {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Uniform> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Uniform>> for Uniform {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Uniform>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Uniform> for Uniform {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Uniform> {
                Uniform::create(builder, &self.low, &self.high)
            }
        }

        /// Builder for serializing an instance of the [Uniform] type.
        ///
        /// Can be created using the [Uniform::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct UniformBuilder<State>(State);

        impl UniformBuilder<()> {
            /// Setter for the [`low` field](Uniform#structfield.low).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn low<T0>(self, value: T0) -> UniformBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                UniformBuilder((value,))
            }

            /// Sets the [`low` field](Uniform#structfield.low) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn low_as_null(self) -> UniformBuilder<((),)> {
                self.low(())
            }
        }

        impl<T0> UniformBuilder<(T0,)> {
            /// Setter for the [`high` field](Uniform#structfield.high).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn high<T1>(self, value: T1) -> UniformBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0,) = self.0;
                UniformBuilder((v0, value))
            }

            /// Sets the [`high` field](Uniform#structfield.high) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn high_as_null(self) -> UniformBuilder<(T0, ())> {
                self.high(())
            }
        }

        impl<T0, T1> UniformBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Uniform].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Uniform>
            where
                Self: ::planus::WriteAsOffset<Uniform>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Uniform>> for UniformBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Uniform>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Uniform> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Uniform>> for UniformBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Uniform>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Uniform>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Uniform> for UniformBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Uniform> {
                let (v0, v1) = &self.0;
                Uniform::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [Uniform].
        #[derive(Copy, Clone)]
        pub struct UniformRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> UniformRef<'a> {
            /// Getter for the [`low` field](Uniform#structfield.low).
            #[inline]
            pub fn low(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Uniform", "low")
            }

            /// Getter for the [`high` field](Uniform#structfield.high).
            #[inline]
            pub fn high(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(1, "Uniform", "high")
            }
        }

        impl<'a> ::core::fmt::Debug for UniformRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("UniformRef");
                if let ::core::option::Option::Some(field_low) = self.low().transpose() {
                    f.field("low", &field_low);
                }
                if let ::core::option::Option::Some(field_high) = self.high().transpose() {
                    f.field("high", &field_high);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<UniformRef<'a>> for Uniform {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: UniformRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    low: if let ::core::option::Option::Some(low) = value.low()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(low)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                    high: if let ::core::option::Option::Some(high) = value.high()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(high)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for UniformRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for UniformRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[UniformRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Uniform>> for Uniform {
            type Value = ::planus::Offset<Uniform>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Uniform>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for UniformRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[UniformRef]", "read_as_root", 0))
            }
        }

        /// The table `Categorical` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Categorical` in the file `schema/ppx.fbs:101`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Categorical {
            /// The field `probs` in the table `Categorical`
            pub probs: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Categorical {
            fn default() -> Self {
                Self { probs: ::core::default::Default::default() }
            }
        }

        impl Categorical {
            /// Creates a [CategoricalBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> CategoricalBuilder<()> {
                CategoricalBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_probs: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_probs = field_probs.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<6> = ::core::default::Default::default();
                if prepared_probs.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_probs) = prepared_probs {
                            object_writer.write::<_, _, 4>(&prepared_probs);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Categorical>> for Categorical {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Categorical> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Categorical>> for Categorical {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<Categorical>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Categorical> for Categorical {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Categorical> {
                Categorical::create(builder, &self.probs)
            }
        }

        /// Builder for serializing an instance of the [Categorical] type.
        ///
        /// Can be created using the [Categorical::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct CategoricalBuilder<State>(State);

        impl CategoricalBuilder<()> {
            /// Setter for the [`probs` field](Categorical#structfield.probs).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn probs<T0>(self, value: T0) -> CategoricalBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                CategoricalBuilder((value,))
            }

            /// Sets the [`probs` field](Categorical#structfield.probs) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn probs_as_null(self) -> CategoricalBuilder<((),)> {
                self.probs(())
            }
        }

        impl<T0> CategoricalBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Categorical].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Categorical>
            where
                Self: ::planus::WriteAsOffset<Categorical>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAs<::planus::Offset<Categorical>> for CategoricalBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Categorical>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Categorical> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAsOptional<::planus::Offset<Categorical>> for CategoricalBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Categorical>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<Categorical>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>> ::planus::WriteAsOffset<Categorical>
            for CategoricalBuilder<(T0,)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Categorical> {
                let (v0,) = &self.0;
                Categorical::create(builder, v0)
            }
        }

        /// Reference to a deserialized [Categorical].
        #[derive(Copy, Clone)]
        pub struct CategoricalRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> CategoricalRef<'a> {
            /// Getter for the [`probs` field](Categorical#structfield.probs).
            #[inline]
            pub fn probs(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Categorical", "probs")
            }
        }

        impl<'a> ::core::fmt::Debug for CategoricalRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("CategoricalRef");
                if let ::core::option::Option::Some(field_probs) = self.probs().transpose() {
                    f.field("probs", &field_probs);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<CategoricalRef<'a>> for Categorical {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: CategoricalRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    probs: if let ::core::option::Option::Some(probs) = value.probs()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(probs)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for CategoricalRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for CategoricalRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[CategoricalRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Categorical>> for Categorical {
            type Value = ::planus::Offset<Categorical>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Categorical>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for CategoricalRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[CategoricalRef]", "read_as_root", 0))
            }
        }

        /// The table `Poisson` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Poisson` in the file `schema/ppx.fbs:105`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Poisson {
            /// The field `rate` in the table `Poisson`
            pub rate: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Poisson {
            fn default() -> Self {
                Self { rate: ::core::default::Default::default() }
            }
        }

        impl Poisson {
            /// Creates a [PoissonBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> PoissonBuilder<()> {
                PoissonBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_rate: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_rate = field_rate.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<6> = ::core::default::Default::default();
                if prepared_rate.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_rate) = prepared_rate {
                            object_writer.write::<_, _, 4>(&prepared_rate);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Poisson>> for Poisson {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Poisson> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Poisson>> for Poisson {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Poisson>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Poisson> for Poisson {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Poisson> {
                Poisson::create(builder, &self.rate)
            }
        }

        /// Builder for serializing an instance of the [Poisson] type.
        ///
        /// Can be created using the [Poisson::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct PoissonBuilder<State>(State);

        impl PoissonBuilder<()> {
            /// Setter for the [`rate` field](Poisson#structfield.rate).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn rate<T0>(self, value: T0) -> PoissonBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                PoissonBuilder((value,))
            }

            /// Sets the [`rate` field](Poisson#structfield.rate) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn rate_as_null(self) -> PoissonBuilder<((),)> {
                self.rate(())
            }
        }

        impl<T0> PoissonBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Poisson].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Poisson>
            where
                Self: ::planus::WriteAsOffset<Poisson>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>> ::planus::WriteAs<::planus::Offset<Poisson>>
            for PoissonBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Poisson>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Poisson> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAsOptional<::planus::Offset<Poisson>> for PoissonBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Poisson>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Poisson>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>> ::planus::WriteAsOffset<Poisson>
            for PoissonBuilder<(T0,)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Poisson> {
                let (v0,) = &self.0;
                Poisson::create(builder, v0)
            }
        }

        /// Reference to a deserialized [Poisson].
        #[derive(Copy, Clone)]
        pub struct PoissonRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> PoissonRef<'a> {
            /// Getter for the [`rate` field](Poisson#structfield.rate).
            #[inline]
            pub fn rate(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Poisson", "rate")
            }
        }

        impl<'a> ::core::fmt::Debug for PoissonRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("PoissonRef");
                if let ::core::option::Option::Some(field_rate) = self.rate().transpose() {
                    f.field("rate", &field_rate);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<PoissonRef<'a>> for Poisson {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: PoissonRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    rate: if let ::core::option::Option::Some(rate) = value.rate()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(rate)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for PoissonRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for PoissonRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[PoissonRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Poisson>> for Poisson {
            type Value = ::planus::Offset<Poisson>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Poisson>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for PoissonRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[PoissonRef]", "read_as_root", 0))
            }
        }

        /// The table `Bernoulli` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Bernoulli` in the file `schema/ppx.fbs:109`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Bernoulli {
            /// The field `probs` in the table `Bernoulli`
            pub probs: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Bernoulli {
            fn default() -> Self {
                Self { probs: ::core::default::Default::default() }
            }
        }

        impl Bernoulli {
            /// Creates a [BernoulliBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> BernoulliBuilder<()> {
                BernoulliBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_probs: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_probs = field_probs.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<6> = ::core::default::Default::default();
                if prepared_probs.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_probs) = prepared_probs {
                            object_writer.write::<_, _, 4>(&prepared_probs);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Bernoulli>> for Bernoulli {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Bernoulli> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Bernoulli>> for Bernoulli {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Bernoulli>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Bernoulli> for Bernoulli {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Bernoulli> {
                Bernoulli::create(builder, &self.probs)
            }
        }

        /// Builder for serializing an instance of the [Bernoulli] type.
        ///
        /// Can be created using the [Bernoulli::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct BernoulliBuilder<State>(State);

        impl BernoulliBuilder<()> {
            /// Setter for the [`probs` field](Bernoulli#structfield.probs).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn probs<T0>(self, value: T0) -> BernoulliBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                BernoulliBuilder((value,))
            }

            /// Sets the [`probs` field](Bernoulli#structfield.probs) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn probs_as_null(self) -> BernoulliBuilder<((),)> {
                self.probs(())
            }
        }

        impl<T0> BernoulliBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Bernoulli].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Bernoulli>
            where
                Self: ::planus::WriteAsOffset<Bernoulli>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAs<::planus::Offset<Bernoulli>> for BernoulliBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Bernoulli>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Bernoulli> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAsOptional<::planus::Offset<Bernoulli>> for BernoulliBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Bernoulli>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Bernoulli>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>> ::planus::WriteAsOffset<Bernoulli>
            for BernoulliBuilder<(T0,)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Bernoulli> {
                let (v0,) = &self.0;
                Bernoulli::create(builder, v0)
            }
        }

        /// Reference to a deserialized [Bernoulli].
        #[derive(Copy, Clone)]
        pub struct BernoulliRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> BernoulliRef<'a> {
            /// Getter for the [`probs` field](Bernoulli#structfield.probs).
            #[inline]
            pub fn probs(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Bernoulli", "probs")
            }
        }

        impl<'a> ::core::fmt::Debug for BernoulliRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("BernoulliRef");
                if let ::core::option::Option::Some(field_probs) = self.probs().transpose() {
                    f.field("probs", &field_probs);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<BernoulliRef<'a>> for Bernoulli {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: BernoulliRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    probs: if let ::core::option::Option::Some(probs) = value.probs()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(probs)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for BernoulliRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for BernoulliRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[BernoulliRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Bernoulli>> for Bernoulli {
            type Value = ::planus::Offset<Bernoulli>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Bernoulli>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for BernoulliRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[BernoulliRef]", "read_as_root", 0))
            }
        }

        /// The table `Beta` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Beta` in the file `schema/ppx.fbs:113`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Beta {
            /// The field `concentration1` in the table `Beta`
            pub concentration1: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
            /// The field `concentration0` in the table `Beta`
            pub concentration0: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Beta {
            fn default() -> Self {
                Self {
                    concentration1: ::core::default::Default::default(),
                    concentration0: ::core::default::Default::default(),
                }
            }
        }

        impl Beta {
            /// Creates a [BetaBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> BetaBuilder<()> {
                BetaBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_concentration1: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
                field_concentration0: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_concentration1 = field_concentration1.prepare(builder);
                let prepared_concentration0 = field_concentration0.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_concentration1.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }
                if prepared_concentration0.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_concentration1) = prepared_concentration1 {
                            object_writer.write::<_, _, 4>(&prepared_concentration1);
                        }
                        if let ::core::option::Option::Some(prepared_concentration0) = prepared_concentration0 {
                            object_writer.write::<_, _, 4>(&prepared_concentration0);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Beta>> for Beta {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Beta> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Beta>> for Beta {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Beta>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Beta> for Beta {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Beta> {
                Beta::create(builder, &self.concentration1, &self.concentration0)
            }
        }

        /// Builder for serializing an instance of the [Beta] type.
        ///
        /// Can be created using the [Beta::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct BetaBuilder<State>(State);

        impl BetaBuilder<()> {
            /// Setter for the [`concentration1` field](Beta#structfield.concentration1).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration1<T0>(self, value: T0) -> BetaBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                BetaBuilder((value,))
            }

            /// Sets the [`concentration1` field](Beta#structfield.concentration1) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration1_as_null(self) -> BetaBuilder<((),)> {
                self.concentration1(())
            }
        }

        impl<T0> BetaBuilder<(T0,)> {
            /// Setter for the [`concentration0` field](Beta#structfield.concentration0).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration0<T1>(self, value: T1) -> BetaBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0,) = self.0;
                BetaBuilder((v0, value))
            }

            /// Sets the [`concentration0` field](Beta#structfield.concentration0) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration0_as_null(self) -> BetaBuilder<(T0, ())> {
                self.concentration0(())
            }
        }

        impl<T0, T1> BetaBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Beta].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Beta>
            where
                Self: ::planus::WriteAsOffset<Beta>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Beta>> for BetaBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Beta>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Beta> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Beta>> for BetaBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Beta>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Beta>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Beta> for BetaBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Beta> {
                let (v0, v1) = &self.0;
                Beta::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [Beta].
        #[derive(Copy, Clone)]
        pub struct BetaRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> BetaRef<'a> {
            /// Getter for the [`concentration1` field](Beta#structfield.concentration1).
            #[inline]
            pub fn concentration1(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Beta", "concentration1")
            }

            /// Getter for the [`concentration0` field](Beta#structfield.concentration0).
            #[inline]
            pub fn concentration0(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(1, "Beta", "concentration0")
            }
        }

        impl<'a> ::core::fmt::Debug for BetaRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("BetaRef");
                if let ::core::option::Option::Some(field_concentration1) = self.concentration1().transpose() {
                    f.field("concentration1", &field_concentration1);
                }
                if let ::core::option::Option::Some(field_concentration0) = self.concentration0().transpose() {
                    f.field("concentration0", &field_concentration0);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<BetaRef<'a>> for Beta {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: BetaRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    concentration1: if let ::core::option::Option::Some(concentration1) = value.concentration1()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(concentration1)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                    concentration0: if let ::core::option::Option::Some(concentration0) = value.concentration0()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(concentration0)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for BetaRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for BetaRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset)
                    .map_err(|error_kind| error_kind.with_error_location("[BetaRef]", "get", buffer.offset_from_start))
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Beta>> for Beta {
            type Value = ::planus::Offset<Beta>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Beta>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for BetaRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[BetaRef]", "read_as_root", 0))
            }
        }

        /// The table `Exponential` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Exponential` in the file `schema/ppx.fbs:118`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Exponential {
            /// The field `rate` in the table `Exponential`
            pub rate: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Exponential {
            fn default() -> Self {
                Self { rate: ::core::default::Default::default() }
            }
        }

        impl Exponential {
            /// Creates a [ExponentialBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> ExponentialBuilder<()> {
                ExponentialBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_rate: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_rate = field_rate.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<6> = ::core::default::Default::default();
                if prepared_rate.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_rate) = prepared_rate {
                            object_writer.write::<_, _, 4>(&prepared_rate);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Exponential>> for Exponential {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Exponential> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Exponential>> for Exponential {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<Exponential>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Exponential> for Exponential {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Exponential> {
                Exponential::create(builder, &self.rate)
            }
        }

        /// Builder for serializing an instance of the [Exponential] type.
        ///
        /// Can be created using the [Exponential::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct ExponentialBuilder<State>(State);

        impl ExponentialBuilder<()> {
            /// Setter for the [`rate` field](Exponential#structfield.rate).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn rate<T0>(self, value: T0) -> ExponentialBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                ExponentialBuilder((value,))
            }

            /// Sets the [`rate` field](Exponential#structfield.rate) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn rate_as_null(self) -> ExponentialBuilder<((),)> {
                self.rate(())
            }
        }

        impl<T0> ExponentialBuilder<(T0,)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Exponential].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Exponential>
            where
                Self: ::planus::WriteAsOffset<Exponential>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAs<::planus::Offset<Exponential>> for ExponentialBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Exponential>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Exponential> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>>
            ::planus::WriteAsOptional<::planus::Offset<Exponential>> for ExponentialBuilder<(T0,)>
        {
            type Prepared = ::planus::Offset<Exponential>;

            #[inline]
            fn prepare(
                &self,
                builder: &mut ::planus::Builder,
            ) -> ::core::option::Option<::planus::Offset<Exponential>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>> ::planus::WriteAsOffset<Exponential>
            for ExponentialBuilder<(T0,)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Exponential> {
                let (v0,) = &self.0;
                Exponential::create(builder, v0)
            }
        }

        /// Reference to a deserialized [Exponential].
        #[derive(Copy, Clone)]
        pub struct ExponentialRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> ExponentialRef<'a> {
            /// Getter for the [`rate` field](Exponential#structfield.rate).
            #[inline]
            pub fn rate(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Exponential", "rate")
            }
        }

        impl<'a> ::core::fmt::Debug for ExponentialRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("ExponentialRef");
                if let ::core::option::Option::Some(field_rate) = self.rate().transpose() {
                    f.field("rate", &field_rate);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<ExponentialRef<'a>> for Exponential {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: ExponentialRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    rate: if let ::core::option::Option::Some(rate) = value.rate()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(rate)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for ExponentialRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for ExponentialRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[ExponentialRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Exponential>> for Exponential {
            type Value = ::planus::Offset<Exponential>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Exponential>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for ExponentialRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[ExponentialRef]", "read_as_root", 0))
            }
        }

        /// The table `Gamma` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Gamma` in the file `schema/ppx.fbs:122`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Gamma {
            /// The field `concentration` in the table `Gamma`
            pub concentration: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
            /// The field `rate` in the table `Gamma`
            pub rate: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Gamma {
            fn default() -> Self {
                Self { concentration: ::core::default::Default::default(), rate: ::core::default::Default::default() }
            }
        }

        impl Gamma {
            /// Creates a [GammaBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> GammaBuilder<()> {
                GammaBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_concentration: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
                field_rate: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_concentration = field_concentration.prepare(builder);
                let prepared_rate = field_rate.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_concentration.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }
                if prepared_rate.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_concentration) = prepared_concentration {
                            object_writer.write::<_, _, 4>(&prepared_concentration);
                        }
                        if let ::core::option::Option::Some(prepared_rate) = prepared_rate {
                            object_writer.write::<_, _, 4>(&prepared_rate);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Gamma>> for Gamma {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Gamma> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Gamma>> for Gamma {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Gamma>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Gamma> for Gamma {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Gamma> {
                Gamma::create(builder, &self.concentration, &self.rate)
            }
        }

        /// Builder for serializing an instance of the [Gamma] type.
        ///
        /// Can be created using the [Gamma::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct GammaBuilder<State>(State);

        impl GammaBuilder<()> {
            /// Setter for the [`concentration` field](Gamma#structfield.concentration).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration<T0>(self, value: T0) -> GammaBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                GammaBuilder((value,))
            }

            /// Sets the [`concentration` field](Gamma#structfield.concentration) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration_as_null(self) -> GammaBuilder<((),)> {
                self.concentration(())
            }
        }

        impl<T0> GammaBuilder<(T0,)> {
            /// Setter for the [`rate` field](Gamma#structfield.rate).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn rate<T1>(self, value: T1) -> GammaBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0,) = self.0;
                GammaBuilder((v0, value))
            }

            /// Sets the [`rate` field](Gamma#structfield.rate) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn rate_as_null(self) -> GammaBuilder<(T0, ())> {
                self.rate(())
            }
        }

        impl<T0, T1> GammaBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Gamma].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Gamma>
            where
                Self: ::planus::WriteAsOffset<Gamma>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Gamma>> for GammaBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Gamma>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Gamma> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Gamma>> for GammaBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Gamma>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Gamma>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Gamma> for GammaBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Gamma> {
                let (v0, v1) = &self.0;
                Gamma::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [Gamma].
        #[derive(Copy, Clone)]
        pub struct GammaRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> GammaRef<'a> {
            /// Getter for the [`concentration` field](Gamma#structfield.concentration).
            #[inline]
            pub fn concentration(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Gamma", "concentration")
            }

            /// Getter for the [`rate` field](Gamma#structfield.rate).
            #[inline]
            pub fn rate(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(1, "Gamma", "rate")
            }
        }

        impl<'a> ::core::fmt::Debug for GammaRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("GammaRef");
                if let ::core::option::Option::Some(field_concentration) = self.concentration().transpose() {
                    f.field("concentration", &field_concentration);
                }
                if let ::core::option::Option::Some(field_rate) = self.rate().transpose() {
                    f.field("rate", &field_rate);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<GammaRef<'a>> for Gamma {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: GammaRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    concentration: if let ::core::option::Option::Some(concentration) = value.concentration()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(concentration)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                    rate: if let ::core::option::Option::Some(rate) = value.rate()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(rate)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for GammaRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for GammaRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset)
                    .map_err(|error_kind| error_kind.with_error_location("[GammaRef]", "get", buffer.offset_from_start))
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Gamma>> for Gamma {
            type Value = ::planus::Offset<Gamma>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Gamma>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for GammaRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[GammaRef]", "read_as_root", 0))
            }
        }

        /// The table `LogNormal` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `LogNormal` in the file `schema/ppx.fbs:127`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct LogNormal {
            /// The field `loc` in the table `LogNormal`
            pub loc: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
            /// The field `scale` in the table `LogNormal`
            pub scale: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for LogNormal {
            fn default() -> Self {
                Self { loc: ::core::default::Default::default(), scale: ::core::default::Default::default() }
            }
        }

        impl LogNormal {
            /// Creates a [LogNormalBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> LogNormalBuilder<()> {
                LogNormalBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_loc: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
                field_scale: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_loc = field_loc.prepare(builder);
                let prepared_scale = field_scale.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_loc.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }
                if prepared_scale.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_loc) = prepared_loc {
                            object_writer.write::<_, _, 4>(&prepared_loc);
                        }
                        if let ::core::option::Option::Some(prepared_scale) = prepared_scale {
                            object_writer.write::<_, _, 4>(&prepared_scale);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<LogNormal>> for LogNormal {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<LogNormal> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<LogNormal>> for LogNormal {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<LogNormal>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<LogNormal> for LogNormal {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<LogNormal> {
                LogNormal::create(builder, &self.loc, &self.scale)
            }
        }

        /// Builder for serializing an instance of the [LogNormal] type.
        ///
        /// Can be created using the [LogNormal::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct LogNormalBuilder<State>(State);

        impl LogNormalBuilder<()> {
            /// Setter for the [`loc` field](LogNormal#structfield.loc).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn loc<T0>(self, value: T0) -> LogNormalBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                LogNormalBuilder((value,))
            }

            /// Sets the [`loc` field](LogNormal#structfield.loc) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn loc_as_null(self) -> LogNormalBuilder<((),)> {
                self.loc(())
            }
        }

        impl<T0> LogNormalBuilder<(T0,)> {
            /// Setter for the [`scale` field](LogNormal#structfield.scale).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn scale<T1>(self, value: T1) -> LogNormalBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0,) = self.0;
                LogNormalBuilder((v0, value))
            }

            /// Sets the [`scale` field](LogNormal#structfield.scale) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn scale_as_null(self) -> LogNormalBuilder<(T0, ())> {
                self.scale(())
            }
        }

        impl<T0, T1> LogNormalBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [LogNormal].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<LogNormal>
            where
                Self: ::planus::WriteAsOffset<LogNormal>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<LogNormal>> for LogNormalBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<LogNormal>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<LogNormal> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<LogNormal>> for LogNormalBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<LogNormal>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<LogNormal>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<LogNormal> for LogNormalBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<LogNormal> {
                let (v0, v1) = &self.0;
                LogNormal::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [LogNormal].
        #[derive(Copy, Clone)]
        pub struct LogNormalRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> LogNormalRef<'a> {
            /// Getter for the [`loc` field](LogNormal#structfield.loc).
            #[inline]
            pub fn loc(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "LogNormal", "loc")
            }

            /// Getter for the [`scale` field](LogNormal#structfield.scale).
            #[inline]
            pub fn scale(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(1, "LogNormal", "scale")
            }
        }

        impl<'a> ::core::fmt::Debug for LogNormalRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("LogNormalRef");
                if let ::core::option::Option::Some(field_loc) = self.loc().transpose() {
                    f.field("loc", &field_loc);
                }
                if let ::core::option::Option::Some(field_scale) = self.scale().transpose() {
                    f.field("scale", &field_scale);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<LogNormalRef<'a>> for LogNormal {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: LogNormalRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    loc: if let ::core::option::Option::Some(loc) = value.loc()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(loc)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                    scale: if let ::core::option::Option::Some(scale) = value.scale()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(scale)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for LogNormalRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for LogNormalRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[LogNormalRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<LogNormal>> for LogNormal {
            type Value = ::planus::Offset<LogNormal>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<LogNormal>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for LogNormalRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[LogNormalRef]", "read_as_root", 0))
            }
        }

        /// The table `Binomial` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Binomial` in the file `schema/ppx.fbs:132`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Binomial {
            /// The field `total_count` in the table `Binomial`
            pub total_count: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
            /// The field `probs` in the table `Binomial`
            pub probs: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Binomial {
            fn default() -> Self {
                Self { total_count: ::core::default::Default::default(), probs: ::core::default::Default::default() }
            }
        }

        impl Binomial {
            /// Creates a [BinomialBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> BinomialBuilder<()> {
                BinomialBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_total_count: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
                field_probs: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_total_count = field_total_count.prepare(builder);
                let prepared_probs = field_probs.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_total_count.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }
                if prepared_probs.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_total_count) = prepared_total_count {
                            object_writer.write::<_, _, 4>(&prepared_total_count);
                        }
                        if let ::core::option::Option::Some(prepared_probs) = prepared_probs {
                            object_writer.write::<_, _, 4>(&prepared_probs);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Binomial>> for Binomial {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Binomial> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Binomial>> for Binomial {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Binomial>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Binomial> for Binomial {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Binomial> {
                Binomial::create(builder, &self.total_count, &self.probs)
            }
        }

        /// Builder for serializing an instance of the [Binomial] type.
        ///
        /// Can be created using the [Binomial::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct BinomialBuilder<State>(State);

        impl BinomialBuilder<()> {
            /// Setter for the [`total_count` field](Binomial#structfield.total_count).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn total_count<T0>(self, value: T0) -> BinomialBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                BinomialBuilder((value,))
            }

            /// Sets the [`total_count` field](Binomial#structfield.total_count) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn total_count_as_null(self) -> BinomialBuilder<((),)> {
                self.total_count(())
            }
        }

        impl<T0> BinomialBuilder<(T0,)> {
            /// Setter for the [`probs` field](Binomial#structfield.probs).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn probs<T1>(self, value: T1) -> BinomialBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0,) = self.0;
                BinomialBuilder((v0, value))
            }

            /// Sets the [`probs` field](Binomial#structfield.probs) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn probs_as_null(self) -> BinomialBuilder<(T0, ())> {
                self.probs(())
            }
        }

        impl<T0, T1> BinomialBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Binomial].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Binomial>
            where
                Self: ::planus::WriteAsOffset<Binomial>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Binomial>> for BinomialBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Binomial>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Binomial> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Binomial>> for BinomialBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Binomial>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Binomial>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Binomial> for BinomialBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Binomial> {
                let (v0, v1) = &self.0;
                Binomial::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [Binomial].
        #[derive(Copy, Clone)]
        pub struct BinomialRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> BinomialRef<'a> {
            /// Getter for the [`total_count` field](Binomial#structfield.total_count).
            #[inline]
            pub fn total_count(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Binomial", "total_count")
            }

            /// Getter for the [`probs` field](Binomial#structfield.probs).
            #[inline]
            pub fn probs(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(1, "Binomial", "probs")
            }
        }

        impl<'a> ::core::fmt::Debug for BinomialRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("BinomialRef");
                if let ::core::option::Option::Some(field_total_count) = self.total_count().transpose() {
                    f.field("total_count", &field_total_count);
                }
                if let ::core::option::Option::Some(field_probs) = self.probs().transpose() {
                    f.field("probs", &field_probs);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<BinomialRef<'a>> for Binomial {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: BinomialRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    total_count: if let ::core::option::Option::Some(total_count) = value.total_count()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(total_count)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                    probs: if let ::core::option::Option::Some(probs) = value.probs()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(probs)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for BinomialRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for BinomialRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[BinomialRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Binomial>> for Binomial {
            type Value = ::planus::Offset<Binomial>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Binomial>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for BinomialRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[BinomialRef]", "read_as_root", 0))
            }
        }

        /// The table `Weibull` in the namespace `ppx`
        ///
        /// Generated from these locations:
        /// * Table `Weibull` in the file `schema/ppx.fbs:137`
        #[derive(Clone, Debug, PartialEq, PartialOrd, ::serde::Serialize, ::serde::Deserialize)]
        pub struct Weibull {
            /// The field `scale` in the table `Weibull`
            pub scale: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
            /// The field `concentration` in the table `Weibull`
            pub concentration: ::core::option::Option<::planus::alloc::boxed::Box<self::Tensor>>,
        }

        #[allow(clippy::derivable_impls)]
        impl ::core::default::Default for Weibull {
            fn default() -> Self {
                Self { scale: ::core::default::Default::default(), concentration: ::core::default::Default::default() }
            }
        }

        impl Weibull {
            /// Creates a [WeibullBuilder] for serializing an instance of this table.
            #[inline]
            pub fn builder() -> WeibullBuilder<()> {
                WeibullBuilder(())
            }

            #[allow(clippy::too_many_arguments)]
            pub fn create(
                builder: &mut ::planus::Builder,
                field_scale: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
                field_concentration: impl ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            ) -> ::planus::Offset<Self> {
                let prepared_scale = field_scale.prepare(builder);
                let prepared_concentration = field_concentration.prepare(builder);

                let mut table_writer: ::planus::table_writer::TableWriter<8> = ::core::default::Default::default();
                if prepared_scale.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(0);
                }
                if prepared_concentration.is_some() {
                    table_writer.write_entry::<::planus::Offset<self::Tensor>>(1);
                }

                unsafe {
                    table_writer.finish(builder, |object_writer| {
                        if let ::core::option::Option::Some(prepared_scale) = prepared_scale {
                            object_writer.write::<_, _, 4>(&prepared_scale);
                        }
                        if let ::core::option::Option::Some(prepared_concentration) = prepared_concentration {
                            object_writer.write::<_, _, 4>(&prepared_concentration);
                        }
                    });
                }
                builder.current_offset()
            }
        }

        impl ::planus::WriteAs<::planus::Offset<Weibull>> for Weibull {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Weibull> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl ::planus::WriteAsOptional<::planus::Offset<Weibull>> for Weibull {
            type Prepared = ::planus::Offset<Self>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Weibull>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl ::planus::WriteAsOffset<Weibull> for Weibull {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Weibull> {
                Weibull::create(builder, &self.scale, &self.concentration)
            }
        }

        /// Builder for serializing an instance of the [Weibull] type.
        ///
        /// Can be created using the [Weibull::builder] method.
        #[derive(Debug)]
        #[must_use]
        pub struct WeibullBuilder<State>(State);

        impl WeibullBuilder<()> {
            /// Setter for the [`scale` field](Weibull#structfield.scale).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn scale<T0>(self, value: T0) -> WeibullBuilder<(T0,)>
            where
                T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                WeibullBuilder((value,))
            }

            /// Sets the [`scale` field](Weibull#structfield.scale) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn scale_as_null(self) -> WeibullBuilder<((),)> {
                self.scale(())
            }
        }

        impl<T0> WeibullBuilder<(T0,)> {
            /// Setter for the [`concentration` field](Weibull#structfield.concentration).
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration<T1>(self, value: T1) -> WeibullBuilder<(T0, T1)>
            where
                T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            {
                let (v0,) = self.0;
                WeibullBuilder((v0, value))
            }

            /// Sets the [`concentration` field](Weibull#structfield.concentration) to null.
            #[inline]
            #[allow(clippy::type_complexity)]
            pub fn concentration_as_null(self) -> WeibullBuilder<(T0, ())> {
                self.concentration(())
            }
        }

        impl<T0, T1> WeibullBuilder<(T0, T1)> {
            /// Finish writing the builder to get an [Offset](::planus::Offset) to a serialized [Weibull].
            #[inline]
            pub fn finish(self, builder: &mut ::planus::Builder) -> ::planus::Offset<Weibull>
            where
                Self: ::planus::WriteAsOffset<Weibull>,
            {
                ::planus::WriteAsOffset::prepare(&self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAs<::planus::Offset<Weibull>> for WeibullBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Weibull>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Weibull> {
                ::planus::WriteAsOffset::prepare(self, builder)
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOptional<::planus::Offset<Weibull>> for WeibullBuilder<(T0, T1)>
        {
            type Prepared = ::planus::Offset<Weibull>;

            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::core::option::Option<::planus::Offset<Weibull>> {
                ::core::option::Option::Some(::planus::WriteAsOffset::prepare(self, builder))
            }
        }

        impl<
            T0: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
            T1: ::planus::WriteAsOptional<::planus::Offset<self::Tensor>>,
        > ::planus::WriteAsOffset<Weibull> for WeibullBuilder<(T0, T1)>
        {
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> ::planus::Offset<Weibull> {
                let (v0, v1) = &self.0;
                Weibull::create(builder, v0, v1)
            }
        }

        /// Reference to a deserialized [Weibull].
        #[derive(Copy, Clone)]
        pub struct WeibullRef<'a>(#[allow(dead_code)] ::planus::table_reader::Table<'a>);

        impl<'a> WeibullRef<'a> {
            /// Getter for the [`scale` field](Weibull#structfield.scale).
            #[inline]
            pub fn scale(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(0, "Weibull", "scale")
            }

            /// Getter for the [`concentration` field](Weibull#structfield.concentration).
            #[inline]
            pub fn concentration(&self) -> ::planus::Result<::core::option::Option<self::TensorRef<'a>>> {
                self.0.access(1, "Weibull", "concentration")
            }
        }

        impl<'a> ::core::fmt::Debug for WeibullRef<'a> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut f = f.debug_struct("WeibullRef");
                if let ::core::option::Option::Some(field_scale) = self.scale().transpose() {
                    f.field("scale", &field_scale);
                }
                if let ::core::option::Option::Some(field_concentration) = self.concentration().transpose() {
                    f.field("concentration", &field_concentration);
                }
                f.finish()
            }
        }

        impl<'a> ::core::convert::TryFrom<WeibullRef<'a>> for Weibull {
            type Error = ::planus::Error;

            #[allow(unreachable_code)]
            fn try_from(value: WeibullRef<'a>) -> ::planus::Result<Self> {
                ::core::result::Result::Ok(Self {
                    scale: if let ::core::option::Option::Some(scale) = value.scale()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(scale)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                    concentration: if let ::core::option::Option::Some(concentration) = value.concentration()? {
                        ::core::option::Option::Some(::planus::alloc::boxed::Box::new(
                            ::core::convert::TryInto::try_into(concentration)?,
                        ))
                    } else {
                        ::core::option::Option::None
                    },
                })
            }
        }

        impl<'a> ::planus::TableRead<'a> for WeibullRef<'a> {
            #[inline]
            fn from_buffer(
                buffer: ::planus::SliceWithStartOffset<'a>,
                offset: usize,
            ) -> ::core::result::Result<Self, ::planus::errors::ErrorKind> {
                ::core::result::Result::Ok(Self(::planus::table_reader::Table::from_buffer(buffer, offset)?))
            }
        }

        impl<'a> ::planus::VectorReadInner<'a> for WeibullRef<'a> {
            type Error = ::planus::Error;
            const STRIDE: usize = 4;

            unsafe fn from_buffer(buffer: ::planus::SliceWithStartOffset<'a>, offset: usize) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(buffer, offset).map_err(|error_kind| {
                    error_kind.with_error_location("[WeibullRef]", "get", buffer.offset_from_start)
                })
            }
        }

        /// # Safety
        /// The planus compiler generates implementations that initialize
        /// the bytes in `write_values`.
        unsafe impl ::planus::VectorWrite<::planus::Offset<Weibull>> for Weibull {
            type Value = ::planus::Offset<Weibull>;
            const STRIDE: usize = 4;
            #[inline]
            fn prepare(&self, builder: &mut ::planus::Builder) -> Self::Value {
                ::planus::WriteAs::prepare(self, builder)
            }

            #[inline]
            unsafe fn write_values(
                values: &[::planus::Offset<Weibull>],
                bytes: *mut ::core::mem::MaybeUninit<u8>,
                buffer_position: u32,
            ) {
                let bytes = bytes as *mut [::core::mem::MaybeUninit<u8>; 4];
                for (i, v) in ::core::iter::Iterator::enumerate(values.iter()) {
                    ::planus::WriteAsPrimitive::write(
                        v,
                        ::planus::Cursor::new(unsafe { &mut *bytes.add(i) }),
                        buffer_position - (Self::STRIDE * i) as u32,
                    );
                }
            }
        }

        impl<'a> ::planus::ReadAsRoot<'a> for WeibullRef<'a> {
            fn read_as_root(slice: &'a [u8]) -> ::planus::Result<Self> {
                ::planus::TableRead::from_buffer(
                    ::planus::SliceWithStartOffset { buffer: slice, offset_from_start: 0 },
                    0,
                )
                .map_err(|error_kind| error_kind.with_error_location("[WeibullRef]", "read_as_root", 0))
            }
        }
    }
}
